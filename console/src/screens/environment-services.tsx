import { useEffect, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ok } from '../api/client';
import type { Answer } from '../api/types';
import { formatDelta } from '../lib/price';
import { useAction, useLoad } from '../ui/hooks';
import { ErrorNote, Loading, LoadState, Section, Select, when } from '../ui/parts';

/** Services (databases): the list, and a new one with its price preview before "Create service". */
export function EnvironmentServices({ id }: { id: string }) {
  const { route } = useLocation();
  const path = { params: { path: { id } } };
  const list = useLoad(() => ok(api.GET('/environments/{id}/services', path)), [id]);
  const choices = useLoad(() => ok(api.GET('/environments/{id}/services/choices', path)), [id]);
  const [plan, setPlan] = useState('');
  const [preview, setPreview] = useState<Answer<'previewService'>>();
  const kind = choices.data?.data[0];
  const body = { kind: 'postgresql' as const, plan: plan || kind?.plans[0]?.id || '' };
  // The plan whose price is asked last: the answers of two quick picks may come back in either order, and only the
  // last pick's is shown (or its refusal).
  const asked = useRef('');
  const ask = useAction(async (wanted: string) => {
    try {
      const answer = await ok(
        api.POST('/environments/{id}/services/preview', { ...path, body: { ...body, plan: wanted } }),
      );
      if (asked.current === wanted) setPreview(answer);
    } catch (err) {
      if (asked.current === wanted) throw err;
    }
  });
  useEffect(() => {
    setPreview(undefined);
    asked.current = body.plan;
    if (body.plan) void ask.run(body.plan);
  }, [body.plan]);
  const create = useAction(async () => {
    route(`/tasks/${(await ok(api.POST('/environments/{id}/services', { ...path, body }))).id}`);
  });
  return (
    <>
      <Section title="Services">
        <LoadState load={list} what="services" />
        {list.data?.data.length === 0 && <p class="muted">No services yet: add one below.</p>}
        <ul class="list">
          {list.data?.data.map((s) => (
            <li key={s.id}>
              <strong>
                {s.kind} {s.version}
              </strong>{' '}
              <span class={`status ${s.status}`}>{s.status}</span>{' '}
              <span class="muted">
                plan {s.plan}, since {when(s.created_at)}
              </span>
            </li>
          ))}
        </ul>
      </Section>
      {kind && (
        <Section title={`New ${kind.kind === 'postgresql' ? 'PostgreSQL database' : kind.kind} service`}>
          <Select
            label="Plan"
            name="plan"
            value={body.plan}
            onChange={(e) => setPlan((e.target as HTMLSelectElement).value)}
            options={kind.plans.map((p) => ({
              value: p.id,
              label: `${p.id}: ${p.cpu} CPU, ${p.memory_mb} MB, ${p.disk_gb} GB`,
            }))}
            error={create.error ?? ask.error}
          />
          {preview && (
            <div class="price" role="status" aria-label="Price preview">
              {formatDelta(preview.monthly_price_delta, preview.currency)}
              <ul class="list">
                {preview.changes.map((c) => (
                  <li key={c}>{c}</li>
                ))}
              </ul>
            </div>
          )}
          <ErrorNote error={ask.error ?? create.error} />
          <button type="button" onClick={() => create.run()} disabled={!preview || create.busy}>
            Create service
          </button>
        </Section>
      )}
    </>
  );
}

/** Where the environment's logs go (set on the project). */
export function EnvironmentLogs({ id, projectId }: { id: string; projectId: string }) {
  const logs = useLoad(() => ok(api.GET('/environments/{id}/logs', { params: { path: { id } } })), [id]);
  const d = logs.data;
  return (
    <Section title="Where the logs go">
      {logs.loading && !d ? <Loading what="log settings" /> : <ErrorNote error={logs.error} />}
      {d && (
        <dl>
          <dt>Destination</dt>
          <dd>{d.destination ? `${d.destination.name} (${d.destination.kind})` : 'none: they stay on the machines'}</dd>
          <dt>Sending</dt>
          <dd>{d.destination ? (d.can_send ? 'works' : 'does not work') : '—'}</dd>
          <dt>On the machines</dt>
          <dd>{d.machines.map((m) => `${m.keeps_days} days`).join(', ') || '—'}</dd>
        </dl>
      )}
      <p>
        <a href={`/projects/${projectId}/logs`}>Change where the project's logs go</a>
      </p>
    </Section>
  );
}
