import type { ComponentChildren } from 'preact';
import { useLocation } from 'preact-iso';
import { api, forgetSession, ok } from '../api/client';
import { useSession } from '../session';
import { Bell } from './bell';
import { consoleName } from './names';

export function Layout({ children }: { children: ComponentChildren }) {
  const { me } = useSession();
  const { route } = useLocation();
  const signOut = async () => {
    await ok(api.DELETE('/session')).catch(() => undefined);
    forgetSession();
    route('/sign-in', true);
  };
  return (
    <>
      <a class="skip" href="#content">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="/">
          {consoleName()}
        </a>
        <nav aria-label="Main">
          <a href="/">Dashboard</a>
          <a href="/account">Account</a>
          {me && <Bell />}
          <button type="button" class="link" onClick={signOut} title={me ? `Signed in as ${me.email}` : undefined}>
            Sign out
          </button>
        </nav>
      </header>
      <div id="content">{children}</div>
    </>
  );
}
