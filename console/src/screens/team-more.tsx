import { api, ok } from '../api/client';
import { useLoad } from '../ui/hooks';
import { JsonView } from '../ui/json-view';
import { CopyButton, ErrorNote, Loading, Section, tabTitle } from '../ui/parts';
import { TEAM_TABS } from './tabs';

/** The team's other sections: what their GET says; repository hosts with the SSH key to add. */
export function TeamSection({ id, tab }: { id: string; tab: string }) {
  const path = { params: { path: { id } } };
  const data = useLoad(async (): Promise<unknown> => {
    switch (tab) {
      case 'settings':
        return ok(api.GET('/teams/{id}/settings', path));
      case 'billing':
        return ok(api.GET('/teams/{id}/billing', path));
      case 'integrations':
        return ok(api.GET('/teams/{id}/integrations/new', path));
      case 'repository-hosts':
        return ok(api.GET('/teams/{id}/repository-hosts', path));
      case 'backup-destinations':
        return ok(api.GET('/teams/{id}/backup-destinations', path));
      case 'tickets':
        return ok(api.GET('/teams/{id}/tickets', path));
      case 'activity':
        return ok(api.GET('/teams/{id}/activity', path));
      default:
        throw new Error('No such section');
    }
  }, [id, tab]);
  const hosts =
    tab === 'repository-hosts'
      ? (data.data as { data: { host: string; public_key?: string }[] } | undefined)
      : undefined;
  return (
    <Section title={tabTitle(TEAM_TABS, tab)}>
      {data.loading && !data.data ? <Loading what={tab} /> : <ErrorNote error={data.error} />}
      {hosts?.data.map(
        (h) =>
          h.public_key && (
            <p key={h.host}>
              Add this public key to {h.host}: <code class="break">{h.public_key}</code>{' '}
              <CopyButton text={h.public_key} />
            </p>
          ),
      )}
      {data.data !== undefined && <JsonView value={data.data} />}
    </Section>
  );
}
