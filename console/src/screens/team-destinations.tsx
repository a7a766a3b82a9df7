import { useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { useAction, useLoad } from '../ui/hooks';
import { KindForm } from '../ui/choice-fields';
import { ErrorNote, LoadState, Section } from '../ui/parts';

/** Backup destinations: the list, and a form laid out by GET .../backup-destinations/new for the kind chosen. */
export function BackupDestinations({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const list = useLoad(() => ok(api.GET('/teams/{id}/backup-destinations', path)), [id]);
  const choices = useLoad(() => ok(api.GET('/teams/{id}/backup-destinations/new', path)), [id]);
  const [kind, setKind] = useState('local');
  const [values, setValues] = useState<Record<string, string>>({});
  const create = useAction(async () => {
    await ok(api.POST('/teams/{id}/backup-destinations', { ...path, body: { kind, ...values } as never }));
    setValues({});
    await list.reload();
  });
  // Every kind has a name; the kind's own fields come from GET .../backup-destinations/new.
  const kindFields = choices.data?.kinds.find((k) => k.kind === kind)?.fields ?? [];
  const fields = [
    ...(kindFields.some((f) => f.name === 'name') ? [] : [{ name: 'name', required: true, secret: false }]),
    ...kindFields,
  ];
  return (
    <>
      <Section title="Backup destinations">
        <LoadState load={list} what="destinations" />
        <ul class="list">
          {list.data?.data.map((d) => (
            <li key={d.id}>
              <strong>{d.name}</strong> <span class="muted">{d.kind}</span>{' '}
              <span class="muted">
                {d.snapshots} backups, {Math.ceil(d.used_bytes / 1024)} KB
              </span>
            </li>
          ))}
        </ul>
        {list.data?.data.length === 0 && <p class="muted">None yet.</p>}
      </Section>
      <Section title="Add a destination">
        <ErrorNote error={choices.error} />
        {choices.data && (
          <KindForm
            action={create}
            kinds={choices.data.kinds}
            kind={kind}
            onKind={setKind}
            fields={fields}
            values={values}
            onChange={setValues}
            submit="Add destination"
          />
        )}
      </Section>
    </>
  );
}
