import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, forgetSession, ok } from '../api/client';
import { useAction } from '../ui/hooks';
import { ErrorNote, Field } from '../ui/parts';

const value = (e: Event) => (e.target as HTMLInputElement).value;

export function SignIn({ onSignedIn, returnTo }: { onSignedIn(): void; returnTo: string }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction(async () => {
    await ok(api.POST('/session', { body: { email, password } }));
    forgetSession();
    onSignedIn();
  });
  return (
    <section class="card narrow">
      <h1>Sign in</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void action.run();
        }}
      >
        <ErrorNote error={action.error} />
        <Field
          label="E-mail address"
          name="email"
          type="email"
          autocomplete="username"
          required
          value={email}
          onInput={(e) => setEmail(value(e))}
          error={action.error}
        />
        <Field
          label="Password"
          name="password"
          type="password"
          autocomplete="current-password"
          required
          value={password}
          onInput={(e) => setPassword(value(e))}
          error={action.error}
        />
        <button type="submit" disabled={action.busy}>
          Sign in
        </button>
      </form>
      <p>
        New here? <a href={`/sign-up${returnTo !== '/' ? `?next=${encodeURIComponent(returnTo)}` : ''}`}>Sign up</a>
      </p>
    </section>
  );
}

export function SignUp() {
  const { route } = useLocation();
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [sent, setSent] = useState(false);
  const signUp = useAction(async () => {
    await ok(api.POST('/signup', { body: { name, email, password } }));
    setSent(true);
  });
  const confirm = useAction(async () => {
    await ok(api.POST('/signup/confirm', { body: { code: code.trim() } }));
    await ok(api.POST('/session', { body: { email, password } }));
    forgetSession();
    route('/', true);
  });
  const resend = useAction(async () => {
    await ok(api.POST('/signup/resend', { body: { email } }));
  });
  if (sent)
    return (
      <section class="card narrow">
        <h1>Confirm your e-mail address</h1>
        <p>We sent a code to {email}. Type it here.</p>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void confirm.run();
          }}
        >
          <ErrorNote error={confirm.error} />
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
        </form>
      </section>
    );
  return (
    <section class="card narrow">
      <h1>Sign up</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void signUp.run();
        }}
      >
        <ErrorNote error={signUp.error} />
        <Field label="Name" name="name" required value={name} onInput={(e) => setName(value(e))} error={signUp.error} />
        <Field
          label="E-mail address"
          name="email"
          type="email"
          autocomplete="username"
          required
          value={email}
          onInput={(e) => setEmail(value(e))}
          error={signUp.error}
        />
        <Field
          label="Password"
          name="password"
          type="password"
          autocomplete="new-password"
          required
          value={password}
          onInput={(e) => setPassword(value(e))}
          error={signUp.error}
        />
        <button type="submit" disabled={signUp.busy}>
          Sign up
        </button>
      </form>
      <p>
        Have an account? <a href="/sign-in">Sign in</a>
      </p>
    </section>
  );
}
