import { useEffect, useRef } from 'preact/hooks';
import { api, ok } from '../api/client';
import type { Answer, Environment, TaskSummary } from '../api/types';
import { useLoad } from '../ui/hooks';
import { CrashMark, useCrashes } from '../ui/crash';
import { when } from '../ui/parts';
import { shortSha } from '../ui/names';
import { accountWords, taskLabel } from '../lib/task-label';

type Choices = Answer<'getEnvironmentDeployChoices'>;
/** What the table shows of one environment; a read that failed is kept as its error. */
interface Glance {
  live: Choices | Error;
  task: TaskSummary | Error | null;
}

const FOLLOW_MS = 2000;
const ENDED = new Set(['succeeded', 'failed', 'cancelled']);

/** Why no release is named (the deploy choices answered blocked), in a table cell's words. */
const NOT_SHOWN: Record<string, string> = {
  deploy_in_progress: 'A deploy is running',
  no_repository: 'Nothing live: no repository yet',
  forbidden: 'Not shown to your role',
};

/**
 * A project's environments at a glance: for each, what is live (commit, message, since when), whether it keeps
 * exiting (restarted by its host), whether visitors see the maintenance page, its last task and how it went, and its address. While a task of one of
 * them runs, the table reads them again every 2 s, and `onEnded` (the environments' own reload) follows its end.
 */
export function EnvironmentsAtAGlance({ envs, onEnded }: { envs: Environment[]; onEnded(): void }) {
  const ids = envs.map((e) => e.id).join(',');
  // Per environment, side by side: its deploy choices (what is live) and its last task.
  const glance = useLoad(
    async () =>
      new Map(
        await Promise.all(
          envs.map(async (e): Promise<[string, Glance]> => {
            const path = { params: { path: { id: e.id } } };
            const [live, tasks] = await Promise.all([
              ok(api.GET('/environments/{id}/deploy', path)).catch((err: Error) => err),
              ok(api.GET('/tasks', { params: { query: { environment: e.id, limit: 1 } } })).catch((err: Error) => err),
            ]);
            return [e.id, { live, task: tasks instanceof Error ? tasks : (tasks.data[0] ?? null) }];
          }),
        ),
      ),
    [ids],
  );
  // the apps that keep exiting after they went live (their web servers' crash records)
  const crashes = useCrashes(envs[0]?.team_id);
  const running = [...(glance.data?.values() ?? [])].some(
    (g) => g.task && !(g.task instanceof Error) && !ENDED.has(g.task.status),
  );
  const wasRunning = useRef(false);
  useEffect(() => {
    if (wasRunning.current && !running) onEnded();
    wasRunning.current = running;
    if (!running) return;
    const timer = setTimeout(() => void glance.reload(), FOLLOW_MS);
    return () => clearTimeout(timer);
  }, [running, glance.data]);
  if (envs.length === 0) return <p class="muted">No environments yet: create the first one below.</p>;
  return (
    <div class="scroll">
      <table class="stack">
        <thead>
          <tr>
            <th>Environment</th>
            <th>Live</th>
            <th>Last task</th>
            <th>Address</th>
          </tr>
        </thead>
        <tbody>
          {envs.map((e) => (
            <tr key={e.id}>
              <td>
                <a href={`/environments/${e.id}`}>{e.name}</a> <span class="muted">{e.git_ref}</span>
              </td>
              <td class="line">
                <LiveCell answer={glance.data?.get(e.id)?.live} />
                {crashes.has(e.id) && (
                  <>
                    {' '}
                    <CrashMark crash={crashes.get(e.id)!} />
                  </>
                )}
                {e.maintenance.on && (
                  <>
                    {' '}
                    <span class="status maintenance">maintenance page on</span>
                  </>
                )}
              </td>
              <td class="line">
                <LastTask task={glance.data?.get(e.id)?.task} />
              </td>
              <td>
                <a href={e.url} rel="noreferrer" target="_blank">
                  {e.url}
                </a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function LiveCell({ answer }: { answer: Choices | Error | undefined }) {
  if (!answer) return <span class="muted">…</span>;
  if (answer instanceof Error) return <span class="muted">Not read: {answer.message}</span>;
  if (!answer.allowed) return <span class="muted">{NOT_SHOWN[answer.reason] ?? answer.message}</span>;
  const live = answer.live_release;
  if (!live) return <span class="muted">Nothing live yet</span>;
  return (
    <>
      <code>{shortSha(live.commit_sha)}</code>
      {live.commit_message && <> {live.commit_message}</>}
      {live.went_live && <span class="muted"> · since {when(live.went_live.at)}</span>}
      {live.serving && !live.serving.web && (
        <>
          {' '}
          <span class="status failed">no web process</span>
          <span class="muted"> visitors get 503</span>
        </>
      )}
    </>
  );
}

function LastTask({ task }: { task: TaskSummary | Error | null | undefined }) {
  if (task === undefined) return <span class="muted">…</span>;
  if (task === null) return <span class="muted">No tasks yet</span>;
  if (task instanceof Error) return <span class="muted">Not read: {task.message}</span>;
  return (
    <>
      <a href={`/tasks/${task.id}`}>{taskLabel(task.type)}</a>{' '}
      <span class={`status ${task.status}`}>{task.status}</span>
      <span class="muted">
        {' '}
        {when(task.created_at)} by {task.account.name ?? accountWords(task.account.via)}
      </span>
    </>
  );
}
