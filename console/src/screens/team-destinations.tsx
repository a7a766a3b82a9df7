import { useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { useAction, useLoad } from '../ui/hooks';
import { type ChoiceField, ChoiceFields, KindForm, kindWords } from '../ui/choice-fields';
import { ActionForm } from '../ui/action-form';
import type { Answer } from '../api/types';
import { ErrorNote, LoadState, Section } from '../ui/parts';

/** Backup destinations: the list, and a form laid out by GET .../backup-destinations/new for the kind chosen. */
export function BackupDestinations({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const list = useLoad(() => ok(api.GET('/teams/{id}/backup-destinations', path)), [id]);
  const choices = useLoad(() => ok(api.GET('/teams/{id}/backup-destinations/new', path)), [id]);
  const [picked, setKind] = useState('local');
  // The kind picked, or the first one offered (local is offered only where BACKUP_LOCAL_ROOTS is set).
  const offered = choices.data?.kinds ?? [];
  const kind = offered.some((k) => k.kind === picked) ? picked : (offered[0]?.kind ?? picked);
  const [values, setValues] = useState<Record<string, string>>({});
  const [editing, setEditing] = useState<string>();
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
              <strong>{d.name}</strong> <span class="muted">{kindWords(d.kind)}</span>{' '}
              <span class="muted">
                {d.snapshots} backups, {Math.ceil(d.used_bytes / 1024)} KB
              </span>
              {d.last_error && <span class="field-error"> Last error: {d.last_error}</span>}{' '}
              {editing === d.id ? (
                <DestinationEdit
                  destination={d}
                  fields={choices.data?.kinds.find((k) => k.kind === d.kind)?.fields ?? []}
                  onDone={async () => {
                    setEditing(undefined);
                    await list.reload();
                  }}
                />
              ) : (
                <button
                  type="button"
                  class="secondary"
                  onClick={() => setEditing(d.id)}
                  aria-label={`Change ${d.name}`}
                >
                  Change
                </button>
              )}
            </li>
          ))}
        </ul>
        {list.data?.data.length === 0 && <p class="muted">No backup destinations yet: add one below.</p>}
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

type Destination = Answer<'getBackupDestination'>;

/** A destination's fields changed (the API probes it again); a secret left empty is kept. */
function DestinationEdit(props: { destination: Destination; fields: ChoiceField[]; onDone(): Promise<void> }) {
  const d = props.destination;
  const settings = d.settings as Record<string, unknown>;
  const [values, setValues] = useState<Record<string, string>>(() =>
    Object.fromEntries([
      ['name', d.name],
      ...props.fields
        .filter((f) => !f.secret && typeof settings[f.name] === 'string')
        .map((f) => [f.name, settings[f.name] as string]),
    ]),
  );
  const save = useAction(async () => {
    const body = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== ''));
    await ok(api.POST('/backup-destinations/{id}', { params: { path: { id: d.id } }, body }));
    await props.onDone();
  });
  const fields = [
    { name: 'name', required: true, secret: false },
    ...props.fields
      .filter((f) => f.name !== 'name')
      .map((f) => (f.secret ? { ...f, required: false, description: 'Leave empty to keep the one it has.' } : f)),
  ];
  return (
    <ActionForm class="card inset" action={save}>
      <ChoiceFields fields={fields} values={values} onChange={setValues} error={save.error} prefix={d.id} />
      <div class="buttons">
        <button type="submit" disabled={save.busy}>
          Save destination
        </button>
        <button type="button" class="secondary" onClick={() => props.onDone()}>
          Close
        </button>
      </div>
    </ActionForm>
  );
}
