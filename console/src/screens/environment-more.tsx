import { api, ok } from '../api/client';
import { useAction, useLoad } from '../ui/hooks';
import { JsonView } from '../ui/json-view';
import { ErrorNote, Loading, Section, tabTitle } from '../ui/parts';
import { ENVIRONMENT_TABS } from './tabs';

/** The environment's other sections: what their GET says (the CDN with its clear button). */
export function EnvironmentSection({ id, tab }: { id: string; tab: string }) {
  const path = { params: { path: { id } } };
  const data = useLoad(async (): Promise<unknown> => {
    switch (tab) {
      case 'edge':
        return ok(api.GET('/environments/{id}/edge', path));
      case 'cdn':
        return ok(api.GET('/environments/{id}/cdn', path));
      case 'services':
        return ok(api.GET('/environments/{id}/services', path));
      case 'storage':
        return ok(api.GET('/environments/{id}/storage/allowance', path));
      case 'logs':
        return ok(api.GET('/environments/{id}/logs', path));
      default:
        throw new Error('No such section');
    }
  }, [id, tab]);
  const clear = useAction(async () => {
    await ok(api.POST('/environments/{id}/cdn/clear', { ...path, body: {} } as never));
  });
  return (
    <Section title={tabTitle(ENVIRONMENT_TABS, tab)}>
      {data.loading && !data.data ? <Loading what={tab} /> : <ErrorNote error={data.error} />}
      {data.data !== undefined && <JsonView value={data.data} />}
      {tab === 'cdn' && (
        <>
          <button type="button" class="secondary" onClick={() => clear.run()} disabled={clear.busy}>
            Clear the CDN
          </button>
          <ErrorNote error={clear.error} />
        </>
      )}
    </Section>
  );
}
