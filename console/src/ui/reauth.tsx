import { useState } from 'preact/hooks';
import { ApiError, api, ok } from '../api/client';
import { Field } from './parts';

export interface Reauth {
  asking: boolean;
  password: string;
  setPassword(v: string): void;
  /**
   * Runs `call`: with the password typed (confirmed first with POST /session/reauthenticate, and given to the
   * call), or without one; a refusal `reauthentication_required` then asks for the password instead of failing.
   */
  run<T>(call: (password?: string) => Promise<T>): Promise<T | undefined>;
}

/** For the calls that need a recent sign-in (or the password): ask for it where the API says so. */
export function useReauth(askFirst = false): Reauth {
  const [asking, setAsking] = useState(askFirst);
  const [password, setPassword] = useState('');
  return {
    asking,
    password,
    setPassword,
    async run(call) {
      const given = asking && password ? password : undefined;
      if (given) await ok(api.POST('/session/reauthenticate', { body: { password: given } }));
      try {
        const answer = await call(given);
        setAsking(askFirst);
        setPassword('');
        return answer;
      } catch (err) {
        if (err instanceof ApiError && err.code === 'reauthentication_required' && !given) {
          setAsking(true);
          return undefined;
        }
        throw err;
      }
    },
  };
}

/** "Your password": the field of a call that confirms who asks with the password (a restore, a reauthentication). */
export function YourPassword(props: {
  value: string;
  onChange(v: string): void;
  error?: unknown;
  name?: string;
  hint?: string;
}) {
  return (
    <Field
      label="Your password"
      name={props.name ?? 'password'}
      type="password"
      autocomplete="current-password"
      required
      hint={props.hint}
      value={props.value}
      onInput={(e) => props.onChange((e.target as HTMLInputElement).value)}
      error={props.error}
    />
  );
}

/** The password field of a call that needs it: shown once the API asked for it (or from the start). */
export function PasswordField({
  reauth,
  error,
  name = 'password',
}: {
  reauth: Reauth;
  error?: unknown;
  name?: string;
}) {
  if (!reauth.asking) return null;
  return (
    <YourPassword
      name={name}
      hint="This needs a recent sign-in: confirm it with your password."
      value={reauth.password}
      onChange={reauth.setPassword}
      error={error}
    />
  );
}
