import { PROJECT_TABS } from './tabs';
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ok } from '../api/client';
import { useAction, useLoad } from '../ui/hooks';
import { ErrorNote, Field, LoadState, Section, Tabs, when } from '../ui/parts';
import { ActionForm } from '../ui/action-form';
import { ProjectSubPage } from './project-more';
import { Crumbs } from '../ui/crumbs';
import { EnvironmentsAtAGlance } from './project-environments';
import { usePageTitle } from '../ui/names';

const value = (e: Event) => (e.target as HTMLInputElement).value;

export function ProjectPage({ id, tab }: { id: string; tab?: string }) {
  const current = tab ? `/${tab}` : '';
  const settings = useLoad(() => ok(api.GET('/projects/{id}/settings', { params: { path: { id } } })), [id]);
  const projects = useLoad(() => ok(api.GET('/projects')), []);
  const teams = useLoad(() => ok(api.GET('/teams')), []);
  const teamId = projects.data?.data.find((p) => p.id === id)?.team_id;
  const team = teams.data?.data.find((t) => t.id === teamId);
  usePageTitle(settings.data?.name, team?.name);
  return (
    <>
      {teamId && (
        <Crumbs
          items={[
            { href: `/teams/${teamId}`, name: team?.name },
            { href: `/projects/${id}`, name: settings.data?.name },
          ]}
        />
      )}
      <h1>{settings.data?.name ?? 'Project'}</h1>
      <Tabs base={`/projects/${id}`} tabs={PROJECT_TABS} current={current} />
      {current === '' ? (
        <ProjectOverview id={id} />
      ) : (
        <ProjectSubPage id={id} tab={tab!} onRenamed={() => settings.reload()} />
      )}
    </>
  );
}

function ProjectOverview({ id }: { id: string }) {
  const { route } = useLocation();
  const path = { params: { path: { id } } };
  const repo = useLoad(() => ok(api.GET('/projects/{id}/repository', path)), [id]);
  const envs = useLoad(() => ok(api.GET('/environments', { params: { query: { project_id: id } } })), [id]);
  const choices = useLoad(() => ok(api.GET('/projects/{id}/environments/choices', path)), [id]);
  const [url, setUrl] = useState('');
  const [name, setName] = useState('');
  const [gitRef, setGitRef] = useState('main');
  const [secret, setSecret] = useState<string>();
  const connect = useAction(async () => {
    const r = await ok(api.POST('/projects/{id}/repository', { ...path, body: { url } }));
    setSecret(r.webhook_secret);
    await Promise.all([repo.reload(), choices.reload()]);
  });
  const reconnect = useAction(async () => {
    await ok(api.POST('/projects/{id}/repository/reconnect', path));
    await repo.reload();
  });
  const create = useAction(async () => {
    const env = await ok(
      api.POST('/projects/{id}/environments', { ...path, body: { name, git_ref: gitRef || 'main' } }),
    );
    route(`/environments/${env.id}`);
  });
  return (
    <>
      <Section title="Environments">
        <LoadState load={envs} what="environments" />
        {envs.data && <EnvironmentsAtAGlance envs={envs.data.data} onEnded={() => void envs.reload()} />}
      </Section>
      <div class="grid">
        <Section title="Repository">
          {repo.data ? (
            <dl>
              <dt>Address</dt>
              <dd>{repo.data.url ?? 'Not connected'}</dd>
              <dt>Reachable</dt>
              <dd>
                {repo.data.reachable === null ? 'not checked' : repo.data.reachable ? 'yes' : 'no'}
                {repo.data.reason ? ` (${repo.data.reason})` : ''}
              </dd>
              <dt>Checked</dt>
              <dd>{when(repo.data.checked_at)}</dd>
              {repo.data.webhook_url && (
                <>
                  <dt>Webhook</dt>
                  <dd class="break">{repo.data.webhook_url}</dd>
                </>
              )}
            </dl>
          ) : (
            <ErrorNote error={repo.error} />
          )}
          {secret && (
            <p class="notice">
              The webhook secret, shown once: <code class="break">{secret}</code>
            </p>
          )}
          <ActionForm action={connect}>
            <Field
              label="Repository address"
              name="url"
              required
              value={url}
              onInput={(e) => setUrl(value(e))}
              error={connect.error}
              hint="An https, ssh or local git address"
            />
            <button type="submit" disabled={connect.busy}>
              Connect
            </button>{' '}
            {repo.data?.url && (
              <button type="button" class="secondary" onClick={() => reconnect.run()} disabled={reconnect.busy}>
                Reconnect
              </button>
            )}
            <ErrorNote error={reconnect.error} />
          </ActionForm>
        </Section>
        <Section title="New environment">
          {choices.data?.blocked ? (
            <p class="notice">{choices.data.message}</p>
          ) : (
            <ActionForm action={create}>
              <Field
                label="Environment name"
                name="name"
                required
                value={name}
                onInput={(e) => setName(value(e))}
                error={create.error}
              />
              <Field
                label="Git branch or tag"
                name="git_ref"
                value={gitRef}
                onInput={(e) => setGitRef(value(e))}
                error={create.error}
              />
              <button type="submit" disabled={create.busy}>
                Create environment
              </button>
            </ActionForm>
          )}
        </Section>
      </div>
    </>
  );
}
