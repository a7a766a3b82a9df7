import { useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { useAction, useLoad } from '../ui/hooks';
import { ErrorNote, Field, Loading, Section, Select, when } from '../ui/parts';
import { ActionForm } from '../ui/action-form';

/** Where the project's logs go: an HTTP or syslog destination, and whether sending to it works. */
export function ProjectLogs({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const logs = useLoad(() => ok(api.GET('/projects/{id}/logs', path)), [id]);
  const [v, setV] = useState<Record<string, string>>({});
  const save = useAction(async (off?: boolean) => {
    const kind = v.kind ?? logs.data?.destination?.kind ?? 'http';
    const destination = off
      ? null
      : kind === 'http'
        ? { kind: 'http' as const, name: v.name ?? '', url: v.url ?? '' }
        : {
            kind: 'syslog' as const,
            name: v.name ?? '',
            host: v.host ?? '',
            port: Number(v.port ?? 514),
            protocol: (v.protocol ?? 'udp') as 'udp' | 'tcp',
          };
    await ok(api.POST('/projects/{id}/logs', { ...path, body: { destination } }));
    await logs.reload();
  });
  const d = logs.data;
  const kind = v.kind ?? d?.destination?.kind ?? 'http';
  const set = (k: string) => (e: Event) => setV({ ...v, [k]: (e.target as HTMLInputElement).value });
  return (
    <Section title="Log forwarding">
      {logs.loading && !d ? <Loading what="log forwarding" /> : <ErrorNote error={logs.error} />}
      {d && (
        <>
          <dl>
            <dt>Destination</dt>
            <dd>
              {d.destination ? `${d.destination.name} (${d.destination.kind})` : 'none: logs stay on the machine'}
            </dd>
            <dt>Sending</dt>
            <dd>
              <span role="status">
                {d.destination ? (d.can_send ? 'works' : 'does not work') : '—'}
                {d.last_error && <span class="field-error"> {d.last_error}</span>}
              </span>
            </dd>
            <dt>Last sent</dt>
            <dd>{when(d.last_sent_at)}</dd>
            <dt>Kept on the machine</dt>
            <dd>{d.keep_days_on_machine} days</dd>
          </dl>
          <ActionForm action={save}>
            <Select
              label="Kind"
              name="destination.kind"
              value={kind}
              onChange={set('kind')}
              options={[
                { value: 'http', label: 'HTTP' },
                { value: 'syslog', label: 'Syslog' },
              ]}
              error={save.error}
            />
            <Field
              label="Name"
              name="destination.name"
              required
              value={v.name ?? ''}
              onInput={set('name')}
              error={save.error}
            />
            {kind === 'http' ? (
              <Field
                label="URL"
                name="destination.url"
                required
                value={v.url ?? ''}
                onInput={set('url')}
                error={save.error}
              />
            ) : (
              <>
                <Field
                  label="Host"
                  name="destination.host"
                  required
                  value={v.host ?? ''}
                  onInput={set('host')}
                  error={save.error}
                />
                <Field
                  label="Port"
                  name="destination.port"
                  inputMode="numeric"
                  value={v.port ?? '514'}
                  onInput={set('port')}
                  error={save.error}
                />
                <Select
                  label="Protocol"
                  name="destination.protocol"
                  value={v.protocol ?? 'udp'}
                  onChange={set('protocol')}
                  options={[
                    { value: 'udp', label: 'UDP' },
                    { value: 'tcp', label: 'TCP' },
                  ]}
                  error={save.error}
                />
              </>
            )}
            <button type="submit" disabled={save.busy}>
              Save destination
            </button>{' '}
            {d.destination && (
              <button type="button" class="secondary" onClick={() => save.run(true)}>
                Stop forwarding
              </button>
            )}
          </ActionForm>
        </>
      )}
    </Section>
  );
}
