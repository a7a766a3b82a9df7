import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import {
  type ExistingVariable,
  looksSecret,
  type ParsedLine,
  type PreviewRow,
  previewImport,
} from '../lib/env-preview';
import { fieldError, useAction, useLoad } from '../ui/hooks';
import { Check, ErrorNote, Field, LoadState, Section, when } from '../ui/parts';
import { ActionForm } from '../ui/action-form';

const value = (e: Event) => (e.target as HTMLInputElement).value;

/** A value shown masked, with a button that shows it (a secret is never sent back: it has none). */
export function MaskedValue({ name, value }: { name: string; value: string | null }) {
  const [shown, setShown] = useState(false);
  if (value === null) return <em class="muted">secret (write-only)</em>;
  return (
    <span class="masked">
      {shown ? <span class="break">{value}</span> : <span aria-hidden="true">••••••••</span>}{' '}
      <button
        type="button"
        class="link"
        aria-pressed={shown}
        aria-label={`${shown ? 'Hide' : 'Show'} the value of ${name}`}
        onClick={() => setShown(!shown)}
      >
        {shown ? 'Hide' : 'Show'}
      </button>
    </span>
  );
}

/**
 * The rows of a pasted .env, each with what Import will do with it. With `secrets`, each row has its
 * "Secret" box (the names that look secret come checked) and a secret's value stays hidden.
 */
export function EnvPreview({
  rows,
  secrets,
  onSecret,
}: {
  rows: PreviewRow[];
  secrets?: Set<string>;
  onSecret?(name: string, on: boolean): void;
}) {
  if (rows.length === 0) return <p class="muted">No variables in the text.</p>;
  return (
    <div class="scroll">
      <table class="stack" aria-label="Preview of the import">
        <thead>
          <tr>
            <th>Line</th>
            <th>Name</th>
            <th>Value</th>
            <th>On import</th>
            {secrets && <th>Secret</th>}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.line} class={`preview-${r.action}`}>
              <td>{r.line}</td>
              <td>
                <code>{r.name}</code>
              </td>
              <td>
                {secrets?.has(r.name) ? (
                  <em class="muted">kept secret</em>
                ) : (
                  <MaskedValue name={r.name} value={r.value} />
                )}
              </td>
              <td class="note">{r.note}</td>
              {secrets && (
                <td>
                  <label class="check">
                    <input
                      type="checkbox"
                      checked={secrets.has(r.name)}
                      onChange={(e) => onSecret?.(r.name, (e.target as HTMLInputElement).checked)}
                    />
                    <span>
                      <span class="sr-only">{r.name} is </span>secret
                    </span>
                  </label>
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Whether an environment's live processes run with its variables (GET /environments/{id}/variables `live`). */
type Live = { applied: boolean; since: string } | null;

/** The set against what the app runs with: saved changes are not live until "Apply" or a deploy. */
function LiveWords({ live }: { live: Live }) {
  if (!live) return null;
  return live.applied ? (
    <p class="muted" role="status">
      The app runs with these variables (started with them {when(live.since)}).
    </p>
  ) : (
    <p class="notice" role="status">
      Changed since the app started ({when(live.since)}): not live yet. “Apply” restarts it with these, one instance at
      a time; so does the next deploy.
    </p>
  );
}

export function VariablesEditor({ scope, id }: { scope: 'projects' | 'environments'; id: string }) {
  const path = { params: { path: { id } } };
  const listed = useLoad(
    (): Promise<{ rows: ExistingVariable[]; live: Live }> =>
      scope === 'projects'
        ? ok(api.GET('/projects/{id}/variables', path)).then((r) => ({ rows: r.data, live: null }))
        : ok(api.GET('/environments/{id}/variables', path)).then((r) => ({ rows: r.data, live: r.live })),
    [scope, id],
  );
  const list = { ...listed, data: listed.data?.rows };
  const live = listed.data?.live ?? null;
  const [name, setName] = useState('');
  const [val, setVal] = useState('');
  const [secret, setSecret] = useState(false);
  // Until the user ticks or unticks "Secret" themselves, it follows the name (checked when it looks secret).
  const [secretChosen, setSecretChosen] = useState(false);
  const [text, setText] = useState('');
  const [parsed, setParsed] = useState<ParsedLine[]>();
  const [overwrite, setOverwrite] = useState(false);
  const [secretNames, setSecretNames] = useState<Set<string>>(new Set());
  const [imported, setImported] = useState<string>();
  const [applyTask, setApplyTask] = useState<string>();
  const save = useAction(async () => {
    const body = { name, value: val, secret };
    if (scope === 'projects') await ok(api.POST('/projects/{id}/variables', { ...path, body }));
    else await ok(api.POST('/environments/{id}/variables', { ...path, body }));
    setName('');
    setVal('');
    setSecret(false);
    setSecretChosen(false);
    await list.reload();
  });
  const preview = useAction(async () => {
    setImported(undefined);
    const lines = (await ok(api.POST('/variables/parse', { body: { text } }))).data;
    setSecretNames(new Set(lines.map((l) => l.name).filter(looksSecret)));
    setParsed(lines);
  });
  const doImport = useAction(async () => {
    const body = { text, overwrite, secret: parsed!.map((l) => l.name).filter((n) => secretNames.has(n)) };
    const r =
      scope === 'projects'
        ? await ok(api.POST('/projects/{id}/variables/import', { ...path, body }))
        : await ok(api.POST('/environments/{id}/variables/import', { ...path, body }));
    setImported(
      `Imported: ${r.created.length} added, ${r.updated.length} replaced, ${r.unchanged.length} unchanged, ${r.skipped.length} kept.`,
    );
    setParsed(undefined);
    setText('');
    await list.reload();
  });
  // Removing the scope's own value (an environment's: the project's, if any, applies again).
  const remove = useAction(async (variable: string) => {
    if (!confirm(`Remove ${variable}?`)) return;
    const params = { params: { path: { id, name: variable } } };
    if (scope === 'projects') await ok(api.DELETE('/projects/{id}/variables/{name}', params));
    else await ok(api.DELETE('/environments/{id}/variables/{name}', params));
    await list.reload();
  });
  const apply = useAction(async () => {
    if (scope === 'projects') {
      const r = await ok(api.POST('/projects/{id}/variables/apply', path));
      setApplyTask(r.data[0]?.id);
    } else setApplyTask((await ok(api.POST('/environments/{id}/variables/apply', path))).id);
  });
  // while an apply runs, the set is read again until the processes have it
  const applying = Boolean(applyTask && live && !live.applied);
  useEffect(() => {
    if (!applying) return;
    const timer = setTimeout(() => void listed.reload(), 2000);
    return () => clearTimeout(timer);
  }, [applying, listed.data]);
  const rows = parsed && list.data ? previewImport(parsed, list.data, overwrite) : undefined;
  return (
    <>
      <Section title="Variables">
        <LoadState load={list} what="variables" />
        {list.data?.length === 0 && <p class="muted">No variables yet: set one or paste a .env below.</p>}
        {list.data && list.data.length > 0 && (
          <div class="scroll">
            <table class="stack" aria-label="Variables">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Value</th>
                  {scope === 'environments' && <th>Source</th>}
                  <th>Changed</th>
                  <th>
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.data.map((v) => (
                  <tr key={`${v.source}-${v.name}`}>
                    <td>
                      <code>{v.name}</code>
                    </td>
                    <td>
                      <MaskedValue name={v.name} value={v.secret ? null : v.value} />
                    </td>
                    {scope === 'environments' && <td>{v.source}</td>}
                    <td class="wide">{when(v.updated_at)}</td>
                    <td>
                      {(scope === 'projects' || v.source === 'environment') && (
                        <button
                          type="button"
                          class="danger"
                          onClick={() => remove.run(v.name)}
                          disabled={remove.busy}
                          aria-label={`Remove ${v.name}`}
                        >
                          Remove
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <LiveWords live={live} />
        <button type="button" onClick={() => apply.run()} disabled={apply.busy}>
          Apply
        </button>
        {applyTask && (
          <p>
            Applying: <a href={`/tasks/${applyTask}`}>follow the task</a>
          </p>
        )}
        <ErrorNote error={apply.error ?? remove.error} />
      </Section>
      <div class="grid">
        <Section title="Set a variable">
          <ActionForm action={save}>
            <Field
              label="Name"
              name="name"
              required
              value={name}
              onInput={(e) => {
                setName(value(e));
                if (!secretChosen) setSecret(looksSecret(value(e)));
              }}
              error={save.error}
            />
            <Field label="Value" name="value" value={val} onInput={(e) => setVal(value(e))} error={save.error} />
            <Check
              label="Secret (write-only)"
              name="secret"
              checked={secret}
              onChange={(on) => {
                setSecret(on);
                setSecretChosen(true);
              }}
            />
            <button type="submit" disabled={save.busy}>
              Save
            </button>
          </ActionForm>
        </Section>
        <Section title="Paste a .env">
          <div class="field">
            <label for="f-text">.env text</label>
            <textarea
              id="f-text"
              name="text"
              rows={6}
              value={text}
              aria-invalid={fieldError(preview.error, 'text') ? true : undefined}
              aria-describedby="f-text-e"
              onInput={(e) => {
                setText((e.target as HTMLTextAreaElement).value);
                setParsed(undefined);
              }}
            />
            {fieldError(preview.error ?? doImport.error, 'text') && (
              <small id="f-text-e" class="field-error">
                {fieldError(preview.error ?? doImport.error, 'text')}
              </small>
            )}
          </div>
          <ErrorNote error={preview.error} />
          <button type="button" onClick={() => preview.run()} disabled={preview.busy || !text.trim()}>
            Preview
          </button>
          {rows && (
            <>
              <EnvPreview
                rows={rows}
                secrets={secretNames}
                onSecret={(n, on) => {
                  const next = new Set(secretNames);
                  if (on) next.add(n);
                  else next.delete(n);
                  setSecretNames(next);
                }}
              />
              <Check
                label="Overwrite values set already"
                name="overwrite"
                checked={overwrite}
                onChange={setOverwrite}
              />
              <ErrorNote error={doImport.error} />
              <button type="button" onClick={() => doImport.run()} disabled={doImport.busy}>
                Import
              </button>
            </>
          )}
          {imported && <p role="status">{imported}</p>}
        </Section>
      </div>
    </>
  );
}
