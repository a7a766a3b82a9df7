import { api, ok } from '../api/client';
import { useLoad } from './hooks';
import { shortSha } from './names';

/** The tasks that put a release live: when one fails, what was live before keeps serving. */
const GOES_LIVE = new Set(['deploy', 'redeploy', 'rollback']);

/**
 * Below a deploy, redeploy or rollback that failed or was cancelled: what serves the environment now (read from
 * its deploy choices, as the overview's "Live now"), and what to do next. Nothing for other tasks.
 */
export function AfterFailure(p: {
  taskId: string;
  type: string;
  status: string | undefined;
  environmentId?: string | null;
}) {
  const ended = p.status === 'failed' || p.status === 'cancelled';
  const envId = ended && GOES_LIVE.has(p.type) ? p.environmentId : null;
  const choices = useLoad(
    () =>
      envId ? ok(api.GET('/environments/{id}/deploy', { params: { path: { id: envId } } })) : Promise.resolve(null),
    [envId],
  );
  const c = choices.data;
  if (!envId || !c?.allowed) return null;
  const live = c.live_release;
  // this very task put it live (it failed after): say nothing rather than something wrong
  if (live?.went_live?.task_id === p.taskId) return null;
  const next =
    p.status === 'cancelled'
      ? 'Deploy again when you are ready.'
      : 'Fix what the log below shows, commit, and deploy again.';
  return (
    <p class="notice" role="status">
      {live ? (
        <>
          Nothing changed on the environment: <code>{shortSha(live.commit_sha)}</code>
          {live.commit_message && <> “{live.commit_message}”</>} keeps serving. {next}
        </>
      ) : (
        <>Nothing is live on the environment yet. {next}</>
      )}
    </p>
  );
}
