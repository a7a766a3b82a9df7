import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ok } from '../api/client';
import type { Answer } from '../api/types';
import { useAction, useLoad } from '../ui/hooks';
import { ErrorNote, Loading, LoadState, Section, Select, when } from '../ui/parts';
import { PricePreview } from '../ui/price-preview';

type Server = Answer<'listServers'>['data'][number];

/** Resize each server of the environment: the plan's price shown before "Resize". */
export function ResizeServers({ environmentId }: { environmentId: string }) {
  const servers = useLoad(() => ok(api.GET('/servers')), [environmentId]);
  const mine = servers.data?.data.filter((s) => s.environment_id === environmentId) ?? [];
  return (
    <Section title="Resize">
      <LoadState load={servers} what="servers" />
      {mine.map((s) => (
        <ResizeServer key={s.id} server={s} />
      ))}
    </Section>
  );
}

function ResizeServer({ server }: { server: Server }) {
  const { route } = useLocation();
  const path = { params: { path: { id: server.id } } };
  const resize = useLoad(() => ok(api.GET('/servers/{id}/resize', path)), [server.id]);
  const [plan, setPlan] = useState('');
  const go = useAction(async () => {
    route(`/tasks/${(await ok(api.POST('/servers/{id}/resize', { ...path, body: { plan } }))).id}`);
  });
  const r = resize.data;
  const choice = r?.choices.find((c) => c.plan === plan);
  return (
    <div class="card inset">
      <p>
        <strong>{server.name}</strong> ({server.role}): plan {server.plan}, {server.cpu} CPU, {server.memory_mb} MB,{' '}
        {server.disk_gb} GB
      </p>
      <ErrorNote error={resize.error} />
      {r && (
        <>
          <Select
            label={`New plan for ${server.name}`}
            name="plan"
            value={plan}
            onChange={(e) => setPlan((e.target as HTMLSelectElement).value)}
            options={[
              { value: '', label: '—' },
              ...r.choices.map((c) => ({
                value: c.plan,
                label: `${c.plan}: ${c.cpu} CPU, ${c.memory_mb} MB, ${c.disk_gb} GB`,
              })),
            ]}
            error={go.error}
          />
          {choice && (
            <>
              <PricePreview
                label={`Plan ${choice.plan}`}
                monthly={choice.monthly_price}
                delta={choice.monthly_price_delta}
                currency={r.currency}
              />
              <button type="button" onClick={() => go.run()} disabled={go.busy}>
                Resize
              </button>
            </>
          )}
          <ErrorNote error={go.error} />
        </>
      )}
    </div>
  );
}

/** Reshape (combined or separate database): POST .../reshape/preview states the change and price first. */
export function Reshape({ id }: { id: string }) {
  const { route } = useLocation();
  const path = { params: { path: { id } } };
  const reshape = useLoad(() => ok(api.GET('/environments/{id}/reshape', path)), [id]);
  const [pick, setPick] = useState('');
  const [preview, setPreview] = useState<Answer<'previewEnvironmentReshape'>>();
  const r = reshape.data;
  const body = () => {
    const [shape, plan] = pick.split(':') as ['combined' | 'separate', string];
    return { shape, ...(plan ? { plan } : {}) };
  };
  const ask = useAction(async () =>
    setPreview(await ok(api.POST('/environments/{id}/reshape/preview', { ...path, body: body() }))),
  );
  const go = useAction(async () => {
    route(`/tasks/${(await ok(api.POST('/environments/{id}/reshape', { ...path, body: body() }))).id}`);
  });
  // The database a reshape left behind (read-only) until it is dropped: irreversible, so confirmed.
  const discard = useAction(async () => {
    if (!confirm('Drop the old database for good, and end its old server?')) return;
    const task = await ok(api.POST('/environments/{id}/discard-old-database', { ...path, body: { confirm: true } }));
    route(`/tasks/${task.id}`);
  });
  return (
    <Section title="Reshape">
      {reshape.loading && !r ? <Loading what="shapes" /> : <ErrorNote error={reshape.error} />}
      {r && (
        <>
          <p>
            The database runs {r.shape === 'combined' ? 'on the web machine' : 'on its own machine'}.
            {r.unavailable_reason && ` ${r.unavailable_reason}`}
          </p>
          {r.old_database && (
            <p class="notice">
              The database the last reshape left is kept, read-only, since {when(r.old_database.kept_since)}.{' '}
              <button type="button" class="danger" onClick={() => discard.run()} disabled={discard.busy}>
                Discard the old database
              </button>
            </p>
          )}
          {r.choices.length > 0 && (
            <>
              <Select
                label="Change to"
                name="shape"
                value={pick}
                onChange={(e) => {
                  setPick((e.target as HTMLSelectElement).value);
                  setPreview(undefined);
                }}
                options={[
                  { value: '', label: '—' },
                  ...r.choices.map((c) => ({
                    value: `${c.shape}:${c.plan ?? ''}`,
                    label: `${c.shape}${c.plan ? ` on ${c.plan}` : ''}`,
                  })),
                ]}
                error={ask.error ?? go.error}
              />
              <button type="button" class="secondary" onClick={() => ask.run()} disabled={!pick || ask.busy}>
                Preview
              </button>
            </>
          )}
          {preview && (
            <div class="card inset">
              <ul class="list">
                {preview.changes.map((c) => (
                  <li key={c}>{c}</li>
                ))}
              </ul>
              <PricePreview
                label={`${preview.shape}${preview.plan ? ` on ${preview.plan}` : ''}`}
                monthly={null}
                delta={preview.monthly_price_delta}
                currency={preview.currency}
              />
              <button type="button" onClick={() => go.run()} disabled={go.busy}>
                Reshape
              </button>
            </div>
          )}
          <ErrorNote error={ask.error ?? go.error ?? discard.error} />
        </>
      )}
    </Section>
  );
}
