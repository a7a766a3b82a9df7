import { api, ok } from '../api/client';
import { useLoad } from '../ui/hooks';
import { JsonView } from '../ui/json-view';
import { ErrorNote, Loading, Section, tabTitle } from '../ui/parts';
import { PROJECT_TABS } from './tabs';
import { VariablesEditor } from './variables';

/** The project's other sections: what their GET says, and the variables editor. */
export function ProjectSubPage({ id, tab }: { id: string; tab: string }) {
  if (tab === 'variables') return <VariablesEditor scope="projects" id={id} />;
  return <ProjectSection id={id} tab={tab} />;
}

function ProjectSection({ id, tab }: { id: string; tab: string }) {
  const path = { params: { path: { id } } };
  const data = useLoad(async (): Promise<unknown> => {
    switch (tab) {
      case 'edge':
        return ok(api.GET('/projects/{id}/edge', path));
      case 'logs':
        return ok(api.GET('/projects/{id}/logs', path));
      case 'settings':
        return ok(api.GET('/projects/{id}/settings', path));
      case 'registries':
        return ok(api.GET('/projects/{id}/registries', path));
      case 'backup-window':
        return ok(api.GET('/projects/{id}/backup-window', path));
      default:
        throw new Error('No such section');
    }
  }, [id, tab]);
  return (
    <Section title={tabTitle(PROJECT_TABS, tab)}>
      {data.loading && !data.data ? <Loading what={tab} /> : <ErrorNote error={data.error} />}
      {data.data !== undefined && <JsonView value={data.data} />}
    </Section>
  );
}
