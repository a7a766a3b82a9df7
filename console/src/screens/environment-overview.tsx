import { useEffect, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ApiError, api, ok } from '../api/client';
import type { Answer, Environment, TaskSummary } from '../api/types';
import { useAction, useLoad } from '../ui/hooks';
import { Check, ErrorNote, Field, Loading, Section, when } from '../ui/parts';
import { duration, shortSha } from '../ui/names';
import { CrashNotice, useCrashes } from '../ui/crash';
import { Sparkline } from '../ui/sparkline';
import { DrillFailureNotice } from './backups';
import { Live } from './environment-live';
import { accountWords, taskLabel } from '../lib/task-label';

type Choices = Answer<'getEnvironmentDeployChoices'>;
type Allowed = Extract<Choices, { allowed: true }>;
type ReleaseRef = NonNullable<Allowed['rollback_release']>;

const FOLLOW_MS = 2000;
const ENDED = new Set(['succeeded', 'failed', 'cancelled']);

/**
 * The environment's overview, answering "what is live, and is it healthy?": a notice while the app keeps exiting,
 * the live release (commit,
 * message, who put it live, when, how long it took), the app's address and domains, instances and usage,
 * the deploy actions the API allows now, maintenance, and the last 10 tasks. While a task of the
 * environment runs, the page follows it and loads again when it ends (no reload).
 */
export function Overview({ id, env, onEnded }: { id: string; env: Environment | undefined; onEnded(): void }) {
  const path = { params: { path: { id } } };
  const choices = useLoad(() => ok(api.GET('/environments/{id}/deploy', path)), [id]);
  const tasks = useLoad(() => ok(api.GET('/tasks', { params: { query: { environment: id, limit: 10 } } })), [id]);
  const domains = useLoad(() => ok(api.GET('/environments/{id}/domains', path)), [id]);
  const scale = useLoad(() => ok(api.GET('/environments/{id}/scale', path)), [id]);
  const usage = useLoad(
    () => ok(api.GET('/environments/{id}/resources', { params: { path: { id }, query: { window: '1h' } } })),
    [id],
    { later: true },
  );
  // whether the live processes have the saved variables (a role that may not read them: nothing said)
  const variables = useLoad(
    () =>
      ok(api.GET('/environments/{id}/variables', path))
        .then((r) => r.live)
        .catch(() => null),
    [id],
    { later: true },
  );
  const crashes = useCrashes(env?.team_id);
  const list = tasks.data?.data ?? [];
  const running = list.some((t) => !ENDED.has(t.status));
  const wasRunning = useRef(false);
  useEffect(() => {
    if (wasRunning.current && !running) {
      // A task just ended: what it changed shows now.
      void choices.reload();
      void domains.reload();
      void scale.reload();
      void variables.reload();
      onEnded();
    }
    wasRunning.current = running;
    if (!running) return;
    const timer = setTimeout(() => void tasks.reload(), FOLLOW_MS);
    return () => clearTimeout(timer);
  }, [running, tasks.data]);
  const c = choices.data;
  return (
    <>
      <DrillFailureNotice id={id} />
      {env && (
        <CrashNotice
          crash={crashes.get(id)}
          projectId={env.project_id}
          rollback={Boolean(c?.allowed && c.rollback_release)}
        />
      )}
      <div class="grid">
        <Live
          choices={c}
          error={choices.error}
          recent={tasks.data?.data}
          variablesPending={variables.data?.applied === false ? `/environments/${id}/variables` : undefined}
        />
        <Section title="Address">
          <dl>
            <dt>App</dt>
            <dd>
              {env ? (
                <a href={env.url} rel="noreferrer" target="_blank" class="break">
                  {env.url}
                </a>
              ) : (
                '…'
              )}
            </dd>
            <dt>Domains</dt>
            <dd>
              {domains.data ? (
                domains.data.data.length === 0 ? (
                  <>
                    None yet. <a href={`/environments/${id}/domains`}>Add a domain</a>
                  </>
                ) : (
                  <ul class="plain">
                    {domains.data.data.map((d) => (
                      <li key={d.id}>
                        <span class="break">{d.hostname}</span> <span class={`status ${d.status}`}>{d.status}</span>
                        <br />
                        <span class="muted">certificate: {certificateWords(d.certificate?.status)}</span>
                      </li>
                    ))}
                  </ul>
                )
              ) : (
                <ErrorNote error={domains.error} />
              )}
            </dd>
          </dl>
        </Section>
        <Section title="Machines">
          {scale.data ? (
            <p>
              {scale.data.instances} instance{scale.data.instances === 1 ? '' : 's'} of plan {scale.data.plan}.{' '}
              <a href={`/environments/${id}/machines`}>Change</a>
            </p>
          ) : scale.error instanceof ApiError && scale.error.status === 404 ? (
            <p class="muted">No web server is recorded for this environment.</p>
          ) : (
            <ErrorNote error={scale.error} />
          )}
          {usage.data && (
            <Sparkline label="CPU over the last hour (% of one core)" unit="%" points={usage.data.series.cpu} />
          )}
        </Section>
      </div>
      <div class="grid">
        <Actions id={id} choices={c} projectId={env?.project_id} />
        <Maintenance id={id} env={env} />
      </div>
      <Section title="Recent tasks">
        {tasks.data ? <RecentTasks tasks={list} /> : <ErrorNote error={tasks.error} />}
      </Section>
    </>
  );
}

function certificateWords(status: string | undefined): string {
  return status === 'issued'
    ? 'issued'
    : status === 'pending'
      ? 'being issued'
      : status === 'failed'
        ? 'failed'
        : 'none yet';
}

const BLOCKED: Record<string, string> = {
  no_repository: 'Connect a repository to the project to deploy.',
  deploy_in_progress: 'A deploy is running on this environment: the next one can start when it ends.',
  forbidden: 'Your role in this team does not allow deploys.',
};

/** The deploy actions the API allows now (GET /environments/{id}/deploy), each saying what it will do. */
function Actions({ id, choices, projectId }: { id: string; choices: Choices | undefined; projectId?: string }) {
  const { route } = useLocation();
  const path = { params: { path: { id } } };
  const [skipSteps, setSkipSteps] = useState(false);
  const deploy = useAction(async (kind: 'deploy' | 'redeploy' | 'rollback' | 'build') => {
    const body = kind === 'deploy' || kind === 'redeploy' ? { skip_steps: skipSteps } : {};
    const task =
      kind === 'deploy'
        ? await ok(api.POST('/environments/{id}/deploy', { ...path, body }))
        : kind === 'redeploy'
          ? await ok(api.POST('/environments/{id}/redeploy', { ...path, body }))
          : kind === 'rollback'
            ? await ok(api.POST('/environments/{id}/rollback', { ...path, body: {} }))
            : await ok(api.POST('/environments/{id}/build', { ...path, body: {} }));
    route(`/tasks/${task.id}`);
  });
  const c = choices;
  const button = (kind: 'deploy' | 'redeploy' | 'rollback' | 'build', label: string, what: string, main = false) => (
    <div class="action">
      <button
        type="button"
        class={main ? undefined : 'secondary'}
        aria-describedby={`do-${kind}`}
        onClick={() => deploy.run(kind)}
        disabled={deploy.busy}
      >
        {label}
      </button>
      <span id={`do-${kind}`} class="muted">
        {what}
      </span>
    </div>
  );
  return (
    <Section title="Deploy">
      {!c ? (
        <Loading what="what can be deployed" />
      ) : !c.allowed ? (
        <p class="notice">
          {BLOCKED[c.reason] ?? c.message} {c.task_id && <a href={`/tasks/${c.task_id}`}>See the running task</a>}
          {c.reason === 'no_repository' && projectId && <a href={`/projects/${projectId}`}>Open the project</a>}
        </p>
      ) : (
        <>
          {button(
            'deploy',
            'Deploy',
            `${c.git_ref} at ${shortSha(c.head_commit)}${c.head_built ? ' (already built: no build)' : ': build it and put it live'}`,
            true,
          )}
          {c.live_release &&
            button('redeploy', 'Redeploy', `${shortSha(c.live_release.commit_sha)} again, the live release`)}
          {c.rollback_release && button('rollback', 'Rollback', `back to ${releaseWords(c.rollback_release)}`)}
          {button('build', 'Build', `${c.git_ref} at ${shortSha(c.head_commit)} without putting it live`)}
          <Check label="Skip the deploy steps" name="skip_steps" checked={skipSteps} onChange={setSkipSteps} />
        </>
      )}
      <ErrorNote error={deploy.error} />
    </Section>
  );
}

function releaseWords(r: ReleaseRef): string {
  return `${shortSha(r.commit_sha)}${r.commit_message ? ` “${r.commit_message}”` : ''}${r.built_at ? `, built ${when(r.built_at)}` : ''}`;
}

/** Maintenance's state, and the one switch that changes it. */
function Maintenance({ id, env }: { id: string; env: Environment | undefined }) {
  const { route } = useLocation();
  const [note, setNote] = useState('');
  const on = env?.maintenance.on;
  const turn = useAction(async () => {
    const task = await ok(
      api.POST('/environments/{id}/maintenance', {
        params: { path: { id } },
        body: { maintenance: !on, ...(!on && note ? { note } : {}) },
      }),
    );
    route(`/tasks/${task.id}`);
  });
  return (
    <Section title="Maintenance">
      {!env ? (
        <Loading what="maintenance" />
      ) : on ? (
        <>
          <p>
            <span class="status failed">On</span> since {when(env.maintenance.since)}: visitors see the maintenance page
            {env.maintenance.note ? ` (“${env.maintenance.note}”)` : ''}.
          </p>
          <button type="button" class="secondary" onClick={() => turn.run()} disabled={turn.busy}>
            Turn maintenance off
          </button>
        </>
      ) : (
        <>
          <p>
            <span class="status succeeded">Off</span>: the app answers its visitors.
          </p>
          <Field
            label="Note for visitors"
            name="note"
            value={note}
            onInput={(e) => setNote((e.target as HTMLInputElement).value)}
            error={turn.error}
          />
          <button type="button" class="secondary" onClick={() => turn.run()} disabled={turn.busy}>
            Turn maintenance on
          </button>
        </>
      )}
      <ErrorNote error={turn.error} />
    </Section>
  );
}

/** The last tasks, each with its status and how long it took (or that it runs). */
function RecentTasks({ tasks }: { tasks: TaskSummary[] }) {
  if (tasks.length === 0) return <p class="muted">No tasks yet.</p>;
  return (
    <div class="scroll">
      <table class="stack">
        <thead>
          <tr>
            <th>Task</th>
            <th>Status</th>
            <th>Asked</th>
            <th>Took</th>
          </tr>
        </thead>
        <tbody>
          {tasks.map((t) => (
            <tr key={t.id}>
              <td>
                <a href={`/tasks/${t.id}`}>{taskLabel(t.type)}</a>
              </td>
              <td>
                <span class={`status ${t.status}`}>{t.status}</span>
              </td>
              <td class="wide">
                {when(t.created_at)} by {t.account.name ?? accountWords(t.account.via)}
              </td>
              <td>
                {duration(t.started_at, t.finished_at) ??
                  (ENDED.has(t.status) ? '—' : t.status === 'pending' ? 'waiting…' : 'running…')}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
