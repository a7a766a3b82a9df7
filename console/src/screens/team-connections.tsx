import { useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { accountWords, taskLabel } from '../lib/task-label';
import { KindForm, kindWords } from '../ui/choice-fields';
import { useAction, useLoad } from '../ui/hooks';
import { CopyButton, ErrorNote, LoadState, Section, Select, when } from '../ui/parts';

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
        {list.data?.data.length === 0 && <p class="muted">No repository hosts yet: add one below.</p>}
        {list.data?.data.map((h) => (
          <div key={h.id} class="card inset">
            <p>
              <strong>{h.host}</strong> <span class="muted">{kindWords(h.kind)}</span>
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
            label: k ? k[0].toUpperCase() + k.slice(1) : 'All',
          }))}
          error={list.error}
        />
        <Select
          label="Type"
          name="type"
          value={type}
          onChange={(e) => setType((e.target as HTMLSelectElement).value)}
          options={['', 'deploy', 'redeploy', 'rollback', 'build', 'backup', 'restore', 'verify', 'scale'].map((k) => ({
            value: k,
            label: k ? taskLabel(k) : 'All',
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
              {when(a.at)}, {a.actor.name ?? accountWords(a.actor.via)}
            </span>
          </li>
        ))}
      </ul>
      {list.data?.data.length === 0 && <p class="muted">Nothing matches.</p>}
    </Section>
  );
}
