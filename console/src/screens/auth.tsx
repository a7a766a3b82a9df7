import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ApiError, forgetSession, ok } from '../api/client';
import { useAction } from '../ui/hooks';
import { ErrorNote, Field } from '../ui/parts';
import { ActionForm } from '../ui/action-form';

const value = (e: Event) => (e.target as HTMLInputElement).value;

/** Where to go once signed in: the `next` of the query when it is a path of this console, else the dashboard. */
export function nextPage(query: Record<string, string>): string {
  const next = query.next;
  return next?.startsWith('/') && !next.startsWith('//') ? next : '/';
}

/** `?next=...` for a link to the other form, keeping where the person was going. */
const carried = (next: string) => (next !== '/' ? `?next=${encodeURIComponent(next)}` : '');

/** The e-mail address and password fields of the sign-in and sign-up forms. */
function Credentials(p: {
  email: string;
  setEmail(v: string): void;
  password: string;
  setPassword(v: string): void;
  passwordAutocomplete: 'current-password' | 'new-password';
  error: unknown;
}) {
  return (
    <>
      <Field
        label="E-mail address"
        name="email"
        type="email"
        autocomplete="username"
        required
        value={p.email}
        onInput={(e) => p.setEmail(value(e))}
        error={p.error}
      />
      <Field
        label="Password"
        name="password"
        type="password"
        autocomplete={p.passwordAutocomplete}
        required
        value={p.password}
        onInput={(e) => p.setPassword(value(e))}
        error={p.error}
      />
    </>
  );
}

export function SignIn({ onSignedIn, returnTo }: { onSignedIn(): void; returnTo: string }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [unconfirmed, setUnconfirmed] = useState(false);
  const signIn = async () => {
    await ok(api.POST('/session', { body: { email, password } }));
    forgetSession();
    onSignedIn();
  };
  const action = useAction(async () => {
    try {
      await signIn();
    } catch (err) {
      // an account whose address is not confirmed yet: the code it was sent is asked for here, then the sign-in goes on
      if (err instanceof ApiError && err.code === 'email_not_confirmed') return setUnconfirmed(true);
      throw err;
    }
  });
  if (unconfirmed) return <ConfirmEmail email={email} then={signIn} />;
  return (
    <section class="card narrow">
      <h1>Sign in</h1>
      <ActionForm action={action}>
        <Credentials
          email={email}
          setEmail={setEmail}
          password={password}
          setPassword={setPassword}
          passwordAutocomplete="current-password"
          error={action.error}
        />
        <button type="submit" disabled={action.busy}>
          Sign in
        </button>
      </ActionForm>
      <p>
        New here? <a href={`/sign-up${carried(returnTo)}`}>Sign up</a>
      </p>
    </section>
  );
}

/**
 * The code the address was sent: confirmed, then `then` (the sign-in with the password just typed). "Send the code
 * again" says that one is on its way (the API answers the same whether or not the account exists).
 */
function ConfirmEmail({ email, then }: { email: string; then(): Promise<void> }) {
  const [code, setCode] = useState('');
  const [resent, setResent] = useState(false);
  const confirm = useAction(async () => {
    await ok(api.POST('/signup/confirm', { body: { code: code.trim() } }));
    await then();
  });
  const resend = useAction(async () => {
    setResent(false);
    await ok(api.POST('/signup/resend', { body: { email } }));
    setResent(true);
  });
  return (
    <section class="card narrow">
      <h1>Confirm your e-mail address</h1>
      <p>We sent a code to {email}. Type it here.</p>
      <ActionForm action={confirm}>
        <Field
          label="Confirmation code"
          name="code"
          required
          autocomplete="one-time-code"
          value={code}
          onInput={(e) => setCode(value(e))}
          error={confirm.error}
        />
        <button type="submit" disabled={confirm.busy}>
          Confirm
        </button>{' '}
        <button type="button" class="secondary" onClick={() => resend.run()} disabled={resend.busy}>
          Send the code again
        </button>
        <ErrorNote error={resend.error} />
        {resent && <p role="status">A new code is on its way to {email}. Codes work for 24 hours.</p>}
      </ActionForm>
    </section>
  );
}

/** Signing up, then the code from the e-mail; then signed in, on to `next` (an invitation's link comes back to it). */
export function SignUp() {
  const { route, query } = useLocation();
  const next = nextPage(query);
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [sent, setSent] = useState(false);
  const signUp = useAction(async () => {
    await ok(api.POST('/signup', { body: { name, email, password } }));
    setSent(true);
  });
  if (sent)
    return (
      <ConfirmEmail
        email={email}
        then={async () => {
          await ok(api.POST('/session', { body: { email, password } }));
          forgetSession();
          route(next, true);
        }}
      />
    );
  return (
    <section class="card narrow">
      <h1>Sign up</h1>
      <ActionForm action={signUp}>
        <Field label="Name" name="name" required value={name} onInput={(e) => setName(value(e))} error={signUp.error} />
        <Credentials
          email={email}
          setEmail={setEmail}
          password={password}
          setPassword={setPassword}
          passwordAutocomplete="new-password"
          error={signUp.error}
        />
        <button type="submit" disabled={signUp.busy}>
          Sign up
        </button>
      </ActionForm>
      <p>
        Have an account? <a href={`/sign-in${carried(next)}`}>Sign in</a>
      </p>
    </section>
  );
}
