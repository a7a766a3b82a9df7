import { useState } from 'preact/hooks';
import { LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { ApiError, api, forgetSession, ok } from './api/client';
import { SessionContext } from './session';
import { useLoad } from './ui/hooks';
import { ErrorNote } from './ui/parts';
import { Layout } from './ui/layout';
import { nextPage, SignIn, SignUp } from './screens/auth';
import { Dashboard } from './screens/dashboard';
import { TeamPage } from './screens/team';
import { ProjectPage } from './screens/project';
import { EnvironmentPage } from './screens/environment';
import { TaskPage } from './screens/task';
import { AccountPage } from './screens/account';
import { InvitationPage } from './screens/invitation';

function NotFound() {
  return (
    <section class="card">
      <h1>Not found</h1>
      <p>
        No page here. <a href="/">Back to the dashboard</a>
      </p>
    </section>
  );
}

/**
 * Pages that need a session. The page's own calls start alongside GET /me (no round trip waits for it);
 * signed out (401), any of them asks for e-mail and password and then shows itself.
 */
function SignedIn() {
  const me = useLoad(() => ok(api.GET('/me')), []);
  const { path } = useLocation();
  // Bumped at each sign-in here: the pages start again (their first calls were refused).
  const [generation, setGeneration] = useState(0);
  if (me.error instanceof ApiError && me.error.status === 401)
    return (
      <SignIn
        onSignedIn={() => {
          setGeneration((g) => g + 1);
          void me.reload();
        }}
        returnTo={path}
      />
    );
  if (me.error) return <ErrorNote error={me.error} />;
  const refresh = async () => {
    forgetSession();
    await me.reload();
  };
  return (
    <SessionContext.Provider value={{ me: me.data, refresh }}>
      <Layout key={generation}>
        <Router>
          <Route path="/" component={Dashboard} />
          <Route path="/teams/:id/:tab?" component={TeamPage} />
          <Route path="/projects/:id/:tab?" component={ProjectPage} />
          <Route path="/environments/:id/:tab?" component={EnvironmentPage} />
          <Route path="/tasks/:id" component={TaskPage} />
          <Route path="/account/:tab?" component={AccountPage} />
          <Route path="/invitations/:id" component={InvitationPage} />
          <Route default component={NotFound} />
        </Router>
      </Layout>
    </SessionContext.Provider>
  );
}

function SignInPage() {
  const { route, query } = useLocation();
  const next = nextPage(query);
  return <SignIn onSignedIn={() => route(next, true)} returnTo={next} />;
}

/** Signing in and up stand alone; every other page is of the signed-in console (one router). */
function Pages() {
  const { path } = useLocation();
  if (path === '/sign-in') return <SignInPage />;
  if (path === '/sign-up') return <SignUp />;
  return <SignedIn />;
}

export function App() {
  return (
    <LocationProvider>
      <main id="main">
        <Pages />
      </main>
    </LocationProvider>
  );
}
