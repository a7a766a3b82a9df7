import { ENVIRONMENT_TABS } from './tabs';
import { api, ok } from '../api/client';
import { useLoad } from '../ui/hooks';
import { ErrorNote, Loading, Tabs } from '../ui/parts';
import { Crumbs } from '../ui/crumbs';
import { usePageTitle } from '../ui/names';
import { readTeams } from '../lib/current-team';
import { Overview } from './environment-overview';
import { VariablesEditor } from './variables';
import { DomainsPage } from './domains';
import { BackupsPage } from './backups';
import { ResourcesPage } from './resources';
import { MachinesPage } from './machines';
import { EnvironmentStorage } from './storage';
import { EnvironmentCdn, EnvironmentEdge } from './environment-edge';
import { EnvironmentLogs, EnvironmentServices } from './environment-services';

export function EnvironmentPage({ id, tab }: { id: string; tab?: string }) {
  const env = useLoad(() => ok(api.GET('/environments/{id}', { params: { path: { id } } })), [id]);
  const teams = useLoad(readTeams, [], { later: true });
  const projectId = env.data?.project_id;
  const project = useLoad(
    () =>
      projectId
        ? ok(api.GET('/projects/{id}/settings', { params: { path: { id: projectId } } }))
        : Promise.resolve(undefined),
    [projectId],
    { later: true },
  );
  const team = teams.data?.data.find((t) => t.id === env.data?.team_id);
  const current = tab ? `/${tab}` : '';
  usePageTitle(env.data?.name, project.data?.name);
  return (
    <>
      {env.data && (
        <Crumbs
          items={[
            { href: `/teams/${env.data.team_id}`, name: team?.name },
            { href: `/projects/${env.data.project_id}`, name: project.data?.name },
            { href: `/environments/${id}`, name: env.data.name },
          ]}
        />
      )}
      <h1>{env.data?.name ?? 'Environment'}</h1>
      <Tabs base={`/environments/${id}`} tabs={ENVIRONMENT_TABS} current={current} />
      {env.error ? <ErrorNote error={env.error} /> : null}
      {current === '' ? (
        <Overview id={id} env={env.data} onEnded={() => env.reload()} />
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
