import { useEffect } from 'preact/hooks';
import { api, ok } from '../api/client';
import type { Answer } from '../api/types';
import { useLoad } from './hooks';
import { when } from './parts';

/** A web server's crash record: its live processes keep exiting (GET /servers, `crash`). */
export type Crash = NonNullable<Answer<'listServers'>['data'][number]['crash']>;

/** How often the crash records are read again: sooner while one is shown, so that its end shows soon. */
const CRASHING_MS = 5000;
const QUIET_MS = 15000;

/** How the last exit ended, in words: "code 5", "signal SIGKILL". */
export function exitWords(c: Crash): string {
  return c.exit_code !== null ? `code ${c.exit_code}` : `signal ${c.signal ?? 'unknown'}`;
}

/**
 * The crash record of each environment of the team with one (environment id -> record), read every 15 s, and every
 * 5 s while one is shown.
 */
export function useCrashes(teamId: string | undefined): Map<string, Crash> {
  const servers = useLoad(
    async () => (teamId ? ok(api.GET('/servers', { params: { query: { team: teamId } } })) : { data: [] }),
    [teamId],
    { later: true },
  );
  const crashes = new Map<string, Crash>();
  for (const s of servers.data?.data ?? []) if (s.role === 'web' && s.crash) crashes.set(s.environment_id, s.crash);
  useEffect(() => {
    const timer = setTimeout(() => void servers.reload(), crashes.size > 0 ? CRASHING_MS : QUIET_MS);
    return () => clearTimeout(timer);
  }, [servers.data, servers.error]);
  return crashes;
}

/** A table cell's mark: "keeps exiting", the last exit and how many. */
export function CrashMark({ crash }: { crash: Crash }) {
  return (
    <>
      <span class="status failed">keeps exiting</span>
      <span class="muted">
        {' '}
        {exitWords(crash)} · {crash.exits} {crash.exits === 1 ? 'exit' : 'exits'} since {when(crash.since)}
      </span>
    </>
  );
}

/** The environment overview's notice while its app keeps exiting: what is happening, and what to do. */
export function CrashNotice({
  crash,
  projectId,
  rollback,
}: {
  crash: Crash | undefined;
  projectId: string;
  /** Whether a release before the live one can be put back (the deploy choices' rollback_release). */
  rollback: boolean;
}) {
  if (!crash) return null;
  return (
    <p class="notice" role="alert">
      The app keeps exiting ({exitWords(crash)}, {crash.exits} {crash.exits === 1 ? 'exit' : 'exits'} since{' '}
      {when(crash.since)}, the last at {when(crash.last_exit_at)}). Its host restarts it, waiting up to 30 s between
      tries, and visitors get 503 meanwhile. What it printed goes to the{' '}
      <a href={`/projects/${projectId}/logs`}>project's log destination</a>: fix it and deploy
      {rollback ? ', or roll back to the release before' : ''}.
    </p>
  );
}
