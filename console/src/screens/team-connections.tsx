import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { type ChoiceField, ChoiceFields, KindForm } from '../ui/choice-fields';
import { useAction, useLoad } from '../ui/hooks';
import { Check, CopyButton, ErrorNote, LoadState, Section, Select, when } from '../ui/parts';
import { ActionForm } from '../ui/action-form';

/** Integrations: the list, and a form laid out by POST .../integrations/fields for the kind chosen. */
export function Integrations({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const choices = useLoad(() => ok(api.GET('/teams/{id}/integrations/new', path)), [id]);
  const [kind, setKind] = useState('webhook');
  const [fields, setFields] = useState<ChoiceField[]>([]);
  const [values, setValues] = useState<Record<string, string>>({});
  const [events, setEvents] = useState<string[]>([]);
  const [created, setCreated] = useState<{ name: string; secret?: string }[]>([]);
  const layout = useAction(async (k: string) => {
    const r = await ok(api.POST('/teams/{id}/integrations/fields', { ...path, body: { kind: k as 'webhook' } }));
    setFields(r.fields.filter((f) => f.name !== 'events' && f.name !== 'kind'));
  });
  useEffect(() => void layout.run(kind), [kind, id]);
  const create = useAction(async () => {
    const r = await ok(api.POST('/teams/{id}/integrations', { ...path, body: { kind, events, ...values } as never }));
    setCreated([...created, { name: r.name, secret: r.secret }]);
    setValues({});
  });
  return (
    <Section title="Integrations">
      <LoadState load={choices} what="integrations" />
      {created.map((c) => (
        <p key={c.name} class="notice" role="status">
          Added {c.name}.{' '}
          {c.secret && (
            <>
              Its signing secret, shown once: <code class="break">{c.secret}</code> <CopyButton text={c.secret} />
            </>
          )}
        </p>
      ))}
      {choices.data && (
        <ActionForm onSubmit={() => create.run()}>
          <ErrorNote error={create.error ?? layout.error} />
          <Select
            label="Kind"
            name="kind"
            value={kind}
            onChange={(e) => setKind((e.target as HTMLSelectElement).value)}
            options={choices.data.kinds.map((k) => ({ value: k.kind, label: k.name }))}
            error={create.error}
          />
          <ChoiceFields fields={fields} values={values} onChange={setValues} error={create.error} prefix={kind} />
          <fieldset class="plain">
            <legend>Events</legend>
            {choices.data.events.map((ev) => (
              <Check
                key={ev}
                label={ev}
                name={`event-${ev}`}
                checked={events.includes(ev)}
                onChange={(on) => setEvents(on ? [...events, ev] : events.filter((x) => x !== ev))}
              />
            ))}
          </fieldset>
          <button type="submit" disabled={create.busy}>
            Add integration
          </button>
        </ActionForm>
      )}
    </Section>
  );
}

/** Repository hosts: each with the SSH public key to add at the host; a form by kind. */
export function RepositoryHosts({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const list = useLoad(() => ok(api.GET('/teams/{id}/repository-hosts', path)), [id]);
  const choices = useLoad(() => ok(api.GET('/teams/{id}/repository-hosts/new', path)), [id]);
  const [kind, setKind] = useState<'https' | 'ssh'>('ssh');
  const [values, setValues] = useState<Record<string, string>>({});
  const create = useAction(async () => {
    await ok(api.POST('/teams/{id}/repository-hosts', { ...path, body: { kind, ...values } as never }));
    setValues({});
    await list.reload();
  });
  const remove = useAction(async (hostId: string) => {
    if (!confirm('Remove this repository host?')) return;
    await ok(api.DELETE('/repository-hosts/{id}', { params: { path: { id: hostId } } }));
    await list.reload();
  });
  const fields = (choices.data?.kinds.find((k) => k.kind === kind)?.fields ?? []).filter((f) => f.name !== 'kind');
  return (
    <>
      <Section title="Repository hosts">
        <LoadState load={list} what="hosts" />
        {list.data?.data.length === 0 && <p class="muted">None yet.</p>}
        {list.data?.data.map((h) => (
          <div key={h.id} class="card inset">
            <p>
              <strong>{h.host}</strong> <span class="muted">{h.kind}</span>
              {h.username && <span class="muted"> as {h.username}</span>}
            </p>
            {h.public_key && (
              <p>
                Add this public key at {h.host} (a deploy key): <code class="break">{h.public_key}</code>{' '}
                <CopyButton text={h.public_key} label="Copy key" />
              </p>
            )}
            <button type="button" class="danger" onClick={() => remove.run(h.id)}>
              Remove
            </button>
          </div>
        ))}
        <ErrorNote error={remove.error} />
      </Section>
      <Section title="Add a repository host">
        <ErrorNote error={choices.error} />
        {choices.data && (
          <KindForm
            action={create}
            kinds={choices.data.kinds}
            kind={kind}
            onKind={(k) => setKind(k as 'ssh')}
            fields={fields}
            values={values}
            onChange={setValues}
            submit="Add host"
          />
        )}
      </Section>
    </>
  );
}

/** The team's activity, filtered as GET /teams/{id}/activity allows. */
export function Activity({ id }: { id: string }) {
  const [kind, setKind] = useState('');
  const [type, setType] = useState('');
  const list = useLoad(
    () =>
      ok(
        api.GET('/teams/{id}/activity', {
          params: { path: { id }, query: { ...(kind ? { kind: kind as never } : {}), ...(type ? { type } : {}) } },
        }),
      ),
    [id, kind, type],
  );
  return (
    <Section title="Activity">
      <div class="grid">
        <Select
          label="Kind"
          name="kind"
          value={kind}
          onChange={(e) => setKind((e.target as HTMLSelectElement).value)}
          options={['', 'deployments', 'backups', 'machines', 'configuration', 'maintenance'].map((k) => ({
            value: k,
            label: k || 'all',
          }))}
          error={list.error}
        />
        <Select
          label="Type"
          name="type"
          value={type}
          onChange={(e) => setType((e.target as HTMLSelectElement).value)}
          options={['', 'deploy', 'redeploy', 'rollback', 'build', 'backup', 'restore', 'scale'].map((k) => ({
            value: k,
            label: k || 'all',
          }))}
          error={list.error}
        />
      </div>
      <LoadState load={list} what="activity" />
      <ul class="list" aria-label="Activity">
        {list.data?.data.map((a) => (
          <li key={a.id}>
            {a.task_id ? <a href={`/tasks/${a.task_id}`}>{a.summary}</a> : a.summary}{' '}
            <span class="muted">
              {when(a.at)}, {a.actor.name ?? a.actor.via}
            </span>
          </li>
        ))}
      </ul>
      {list.data?.data.length === 0 && <p class="muted">Nothing matches.</p>}
    </Section>
  );
}
