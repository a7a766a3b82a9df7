import { useEffect, useRef, useState } from 'preact/hooks';
import { API_BASE, api, ok } from '../api/client';
import { LogFollower } from '../lib/log-follower';
import { useAction, useLoad } from '../ui/hooks';
import { ErrorNote, Loading, Section, when } from '../ui/parts';
import { PhaseTimeline } from '../ui/phases';
import { taskLabel } from '../lib/task-label';
import { usePageTitle } from '../ui/names';
import { Crumbs } from '../ui/crumbs';
import { readTeams } from '../lib/current-team';
import { AfterFailure } from '../ui/after-failure';

const HOW: Record<string, string> = {
  session: 'in the console',
  cli: 'with the command line',
  token: 'with an access token',
  auto_deploy: 'by a push (auto-deploy)',
  schedule: 'on schedule',
  system: 'by the system',
};

export function TaskPage({ id }: { id: string }) {
  const task = useLoad(() => ok(api.GET('/tasks/{id}', { params: { path: { id } } })), [id]);
  const [log, setLog] = useState('');
  const [status, setStatus] = useState<string>();
  const pre = useRef<HTMLElement>(null);
  useEffect(() => {
    setLog('');
    const follower = new LogFollower({
      base: API_BASE,
      taskId: id,
      onText: (t) => setLog((l) => l + t),
      onStatus: setStatus,
    }).start();
    void follower.done.then(() => task.reload());
    return () => follower.stop();
  }, [id]);
  useEffect(() => {
    const el = pre.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [log]);
  const cancel = useAction(async () => {
    setStatus((await ok(api.POST('/tasks/{id}/cancel', { params: { path: { id } } }))).status);
    await task.reload();
  });
  const t = task.data;
  const shown = status ?? t?.status;
  // the tab says which task of which environment ("Deploy · production · storefront"): people keep many open; the
  // crumbs say the same as links (team › project › environment › the task)
  const envId = t?.environment_id;
  const projectId = t?.project_id;
  const place = useLoad(async () => {
    const [env, project, teams] = await Promise.all([
      envId ? ok(api.GET('/environments/{id}', { params: { path: { id: envId } } })) : undefined,
      projectId ? ok(api.GET('/projects/{id}/settings', { params: { path: { id: projectId } } })) : undefined,
      readTeams(),
    ]);
    return { env: env?.name, project: project?.name, team: teams.data.find((x) => x.id === t?.team_id)?.name };
  }, [envId, projectId, t?.team_id]);
  usePageTitle(t && taskLabel(t.type), place.data?.env, place.data?.project);
  // the old instance stops after the task succeeded: read its phases again until that shows (a few times)
  const [rereads, setRereads] = useState(0);
  const stopping =
    t?.status === 'succeeded' &&
    t.phases.some((p) => p.name === 'edge_switched') &&
    !t.phases.some((p) => p.name === 'old_stopped');
  useEffect(() => {
    if (!stopping || rereads >= 5) return;
    const timer = setTimeout(() => {
      setRereads((n) => n + 1);
      void task.reload();
    }, 1000);
    return () => clearTimeout(timer);
  }, [stopping, rereads]);
  return (
    <>
      {t && (
        <Crumbs
          items={[
            ...(t.team_id ? [{ href: `/teams/${t.team_id}`, name: place.data?.team }] : []),
            ...(t.project_id ? [{ href: `/projects/${t.project_id}`, name: place.data?.project }] : []),
            ...(t.environment_id ? [{ href: `/environments/${t.environment_id}`, name: place.data?.env }] : []),
            { href: `/tasks/${id}`, name: taskLabel(t.type) },
          ]}
        />
      )}
      <h1>{t ? `Task: ${taskLabel(t.type)}` : 'Task'}</h1>
      {task.loading && !t ? <Loading what="the task" /> : <ErrorNote error={task.error} />}
      {t && (
        <Section title="Status">
          <dl>
            <dt>Status</dt>
            <dd>
              <span class={`status ${shown}`} data-status={shown}>
                {shown}
              </span>
              {t.error && <span class="field-error"> {t.error}</span>}
            </dd>
            <dt>Started by</dt>
            <dd>
              {t.account.name ?? 'nobody'} {HOW[t.account.via] ?? t.account.via}
            </dd>
            <dt>Asked</dt>
            <dd>{when(t.created_at)}</dd>
            <dt>Started</dt>
            <dd>{when(t.started_at)}</dd>
            <dt>Finished</dt>
            <dd>{when(t.finished_at)}</dd>
            {t.environment_id && (
              <>
                <dt>Environment</dt>
                <dd>
                  <a href={`/environments/${t.environment_id}`}>Open the environment</a>
                </dd>
              </>
            )}
          </dl>
          {shown === 'pending' && (
            <button type="button" class="danger" onClick={() => cancel.run()} disabled={cancel.busy}>
              Cancel
            </button>
          )}
          <ErrorNote error={cancel.error} />
          <AfterFailure taskId={id} type={t.type} status={shown} environmentId={t.environment_id} />
        </Section>
      )}
      {t && t.phases.length > 0 && (
        <Section title="Phases">
          <PhaseTimeline phases={t.phases} />
        </Section>
      )}
      <Section title="Log">
        {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region is reached with the keyboard */}
        <section ref={pre} class="log" role="log" aria-live="polite" tabIndex={0} aria-label="Task log">
          {log || 'Nothing printed yet.'}
        </section>
      </Section>
    </>
  );
}
