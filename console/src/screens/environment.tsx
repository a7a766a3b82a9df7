import { ENVIRONMENT_TABS } from './tabs';
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ok } from '../api/client';
import type { Environment } from '../api/types';
import { useAction, useLoad } from '../ui/hooks';
import { Check, ErrorNote, Field, Loading, Section, Tabs } from '../ui/parts';
import { TaskList } from '../ui/tasks';
import { VariablesEditor } from './variables';
import { DomainsPage } from './domains';
import { BackupsPage, DrillFailureNotice } from './backups';
import { ResourcesPage } from './resources';
import { MachinesPage } from './machines';
import { EnvironmentStorage } from './storage';
import { EnvironmentCdn, EnvironmentEdge } from './environment-edge';
import { EnvironmentLogs, EnvironmentServices } from './environment-services';

export function EnvironmentPage({ id, tab }: { id: string; tab?: string }) {
  const env = useLoad(() => ok(api.GET('/environments/{id}', { params: { path: { id } } })), [id]);
  const current = tab ? `/${tab}` : '';
  return (
    <>
      <p class="crumbs">
        {env.data && <a href={`/projects/${env.data.project_id}`}>The project</a>}
        {env.data && ' / '}
        Environment
      </p>
      <h1>{env.data?.name ?? 'Environment'}</h1>
      <Tabs base={`/environments/${id}`} tabs={ENVIRONMENT_TABS} current={current} />
      {env.error ? <ErrorNote error={env.error} /> : null}
      {current === '' ? (
        <Overview id={id} env={env.data} />
      ) : !env.data ? (
        !env.error && <Loading what="the environment" />
      ) : current === '/variables' ? (
        <VariablesEditor scope="environments" id={id} />
      ) : current === '/domains' ? (
        <DomainsPage id={id} />
      ) : current === '/backups' ? (
        <BackupsPage env={env.data} />
      ) : current === '/resources' ? (
        <ResourcesPage id={id} />
      ) : current === '/machines' ? (
        <MachinesPage id={id} />
      ) : current === '/edge' ? (
        <EnvironmentEdge id={id} />
      ) : current === '/cdn' ? (
        <EnvironmentCdn id={id} />
      ) : current === '/services' ? (
        <EnvironmentServices id={id} />
      ) : current === '/storage' ? (
        <EnvironmentStorage id={id} />
      ) : current === '/logs' ? (
        <EnvironmentLogs id={id} projectId={env.data.project_id} />
      ) : (
        <p>No such section.</p>
      )}
    </>
  );
}

/** Status, the deploy buttons, maintenance and recent tasks; its calls start with the environment's. */
function Overview({ id, env }: { id: string; env: Environment | undefined }) {
  const { route } = useLocation();
  const path = { params: { path: { id } } };
  const choices = useLoad(() => ok(api.GET('/environments/{id}/deploy', path)), [id]);
  const tasks = useLoad(() => ok(api.GET('/tasks', { params: { query: { environment: id, limit: 8 } } })), [id]);
  const [skipSteps, setSkipSteps] = useState(false);
  const [note, setNote] = useState('');
  const go = (id: string) => route(`/tasks/${id}`);
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
    go(task.id);
  });
  const maintenance = useAction(async (on: boolean) => {
    const task = await ok(
      api.POST('/environments/{id}/maintenance', { ...path, body: { maintenance: on, ...(note ? { note } : {}) } }),
    );
    go(task.id);
  });
  const latest = tasks.data?.data[0];
  const c = choices.data;
  return (
    <>
      <DrillFailureNotice id={id} />
      <div class="grid">
        <Section title="Status">
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
            <dt>Branch</dt>
            <dd>{env?.git_ref ?? '…'}</dd>
            <dt>Latest task</dt>
            <dd>
              {latest ? (
                <>
                  <a href={`/tasks/${latest.id}`}>{latest.type}</a>{' '}
                  <span class={`status ${latest.status}`}>{latest.status}</span>
                </>
              ) : (
                'none yet'
              )}
            </dd>
            {c?.allowed && (
              <>
                <dt>Live release</dt>
                <dd>{c.live_release ? c.live_release.commit_sha.slice(0, 10) : 'none'}</dd>
                <dt>Head</dt>
                <dd>
                  {c.head_commit.slice(0, 10)} {c.head_built ? '(built)' : ''}
                </dd>
              </>
            )}
          </dl>
        </Section>
        <Section title="Deploy">
          {c && !c.allowed && (
            <p class="notice">
              {c.message} {c.task_id && <a href={`/tasks/${c.task_id}`}>See the running task</a>}
            </p>
          )}
          <Check label="Skip the deploy steps" name="skip_steps" checked={skipSteps} onChange={setSkipSteps} />
          <div class="buttons">
            <button type="button" onClick={() => deploy.run('deploy')} disabled={deploy.busy}>
              Deploy
            </button>
            <button type="button" class="secondary" onClick={() => deploy.run('redeploy')} disabled={deploy.busy}>
              Redeploy
            </button>
            <button type="button" class="secondary" onClick={() => deploy.run('rollback')} disabled={deploy.busy}>
              Rollback
            </button>
            <button type="button" class="secondary" onClick={() => deploy.run('build')} disabled={deploy.busy}>
              Build
            </button>
          </div>
          <ErrorNote error={deploy.error} />
        </Section>
        <Section title="Maintenance">
          <Field
            label="Note for visitors"
            name="note"
            value={note}
            onInput={(e) => setNote((e.target as HTMLInputElement).value)}
            error={maintenance.error}
          />
          <div class="buttons">
            <button type="button" class="secondary" onClick={() => maintenance.run(true)} disabled={maintenance.busy}>
              Turn maintenance on
            </button>
            <button type="button" class="secondary" onClick={() => maintenance.run(false)} disabled={maintenance.busy}>
              Turn maintenance off
            </button>
          </div>
          <ErrorNote error={maintenance.error} />
        </Section>
      </div>
      <Section title="Recent tasks">
        {tasks.data ? <TaskList tasks={tasks.data.data} /> : <ErrorNote error={tasks.error} />}
      </Section>
    </>
  );
}
