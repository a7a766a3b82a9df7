import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ok } from '../api/client';
import type { Answer } from '../api/types';
import { useAction, useLoad } from '../ui/hooks';
import { ErrorNote, Field, Loading, LoadState, Section, Select, when } from '../ui/parts';
import { ActionForm } from '../ui/action-form';

const input = (set: (v: string) => void) => (e: Event) => set((e.target as HTMLInputElement).value);

/** Name and domain allowance; then cancel and delete, each after its confirmation. */
export function ProjectSettings({ id, onSaved }: { id: string; onSaved(): void }) {
  const { route } = useLocation();
  const path = { params: { path: { id } } };
  const settings = useLoad(() => ok(api.GET('/projects/{id}/settings', path)), [id]);
  const [name, setName] = useState<string>();
  const [saved, setSaved] = useState(false);
  const [cancelInfo, setCancelInfo] = useState<Answer<'getProjectCancellation'>>();
  const save = useAction(async () => {
    setSaved(false);
    await ok(api.POST('/projects/{id}/settings', { ...path, body: { name: name ?? settings.data?.name } }));
    setSaved(true);
    await settings.reload();
    onSaved();
  });
  const askCancel = useAction(async () => setCancelInfo(await ok(api.GET('/projects/{id}/cancel', path))));
  const cancel = useAction(async () => {
    setCancelInfo(await ok(api.POST('/projects/{id}/cancel', { ...path, body: { confirm: true } })));
  });
  const remove = useAction(async () => {
    if (!confirm('Delete this project for good?')) return;
    await ok(api.DELETE('/projects/{id}', path));
    route('/');
  });
  return (
    <>
      <Section title="Settings">
        <LoadState load={settings} what="settings" />
        {settings.data && (
          <ActionForm action={save}>
            <Field
              label="Project name"
              name="name"
              required
              value={name ?? settings.data.name}
              onInput={input(setName)}
              error={save.error}
            />
            <p class="muted">
              Domains allowed: {settings.data.domain_allowance}
              {settings.data.domain_allowance_is_default && ' (the default)'}
            </p>
            <button type="submit" disabled={save.busy}>
              Save
            </button>
            {saved && <p role="status">Saved.</p>}
          </ActionForm>
        )}
      </Section>
      <Section title="Cancel or delete">
        {!cancelInfo && (
          <button type="button" class="danger" onClick={() => askCancel.run()}>
            Cancel the project…
          </button>
        )}
        {cancelInfo && (
          <div class="card inset" role="alertdialog" aria-label="Cancel the project">
            <p>{cancelInfo.message}</p>
            {cancelInfo.cancelled_at ? (
              <p role="status">
                Cancelled {when(cancelInfo.cancelled_at)}; data deleted after {when(cancelInfo.data_deleted_after)}.
              </p>
            ) : (
              <>
                <p>
                  Stops {cancelInfo.environments.map((e) => e.name).join(', ') || 'no environments'}
                  {cancelInfo.subscriptions.length > 0 &&
                    `; ends ${cancelInfo.subscriptions.map((x) => x.item).join(', ')}`}
                  .
                </p>
                <button type="button" class="danger" onClick={() => cancel.run()} disabled={cancel.busy}>
                  Confirm cancellation
                </button>{' '}
                <button type="button" class="secondary" onClick={() => setCancelInfo(undefined)}>
                  Keep it
                </button>
              </>
            )}
          </div>
        )}
        <ErrorNote error={askCancel.error ?? cancel.error} />
        <p>
          <button type="button" class="danger" onClick={() => remove.run()} disabled={remove.busy}>
            Delete project
          </button>
        </p>
        <ErrorNote error={remove.error} />
      </Section>
    </>
  );
}

export function ProjectRegistries({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const list = useLoad(() => ok(api.GET('/projects/{id}/registries', path)), [id]);
  const [host, setHost] = useState('');
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const add = useAction(async () => {
    await ok(api.POST('/projects/{id}/registries', { ...path, body: { host, username, password } }));
    setHost('');
    setPassword('');
    await list.reload();
  });
  const remove = useAction(async (h: string) => {
    await ok(api.DELETE('/projects/{id}/registries/{host}', { params: { path: { id, host: h } } }));
    await list.reload();
  });
  return (
    <Section title="Registries">
      <LoadState load={list} what="registries" />
      <ul class="list">
        {list.data?.data.map((r) => (
          <li key={r.host}>
            <strong>{r.host}</strong> <span class="muted">as {r.username}</span>{' '}
            <button type="button" class="danger" onClick={() => remove.run(r.host)}>
              Remove
            </button>
          </li>
        ))}
      </ul>
      <ActionForm onSubmit={() => add.run()}>
        <ErrorNote error={add.error ?? remove.error} />
        <Field label="Registry host" name="host" required value={host} onInput={input(setHost)} error={add.error} />
        <Field
          label="Username"
          name="username"
          required
          value={username}
          onInput={input(setUsername)}
          error={add.error}
        />
        <Field
          label="Password (write-only)"
          name="password"
          type="password"
          autocomplete="off"
          required
          value={password}
          onInput={input(setPassword)}
          error={add.error}
        />
        <button type="submit" disabled={add.busy}>
          Save registry
        </button>
      </ActionForm>
    </Section>
  );
}

export function BackupWindow({ id, teamId }: { id: string; teamId: string | undefined }) {
  const path = { params: { path: { id } } };
  const win = useLoad(() => ok(api.GET('/projects/{id}/backup-window', path)), [id]);
  const destinations = useLoad(
    async () =>
      teamId ? ok(api.GET('/teams/{id}/backup-destinations', { params: { path: { id: teamId } } })) : undefined,
    [teamId],
  );
  const [form, setForm] = useState<{ hour?: string; days?: string; dest?: string }>({});
  const save = useAction(async () => {
    const w = win.data!;
    await ok(
      api.POST('/projects/{id}/backup-window', {
        ...path,
        body: {
          hour_utc: Number(form.hour ?? w.hour_utc),
          retention_days: Number(form.days ?? w.retention_days),
          destination_id: form.dest ?? w.destination_id ?? destinations.data?.data[0]?.id ?? '',
        },
      }),
    );
    await win.reload();
  });
  const w = win.data;
  return (
    <Section title="Backup window">
      {win.loading && !w ? <Loading what="the backup window" /> : <ErrorNote error={win.error} />}
      {w && (
        <ActionForm onSubmit={() => save.run()}>
          {w.default && <p class="muted">The default window: set one to choose the hour and destination.</p>}
          <ErrorNote error={save.error} />
          <Field
            label="Hour (UTC)"
            name="hour_utc"
            inputMode="numeric"
            value={form.hour ?? String(w.hour_utc)}
            onInput={input((v) => setForm({ ...form, hour: v }))}
            error={save.error}
          />
          <Field
            label="Keep backups (days)"
            name="retention_days"
            inputMode="numeric"
            value={form.days ?? String(w.retention_days)}
            onInput={input((v) => setForm({ ...form, days: v }))}
            error={save.error}
          />
          <Select
            label="Destination"
            name="destination_id"
            value={form.dest ?? w.destination_id ?? ''}
            onChange={(e) => setForm({ ...form, dest: (e.target as HTMLSelectElement).value })}
            options={(destinations.data?.data ?? []).map((d) => ({ value: d.id, label: d.name }))}
            error={save.error}
          />
          <button type="submit" disabled={save.busy}>
            Save backup window
          </button>
        </ActionForm>
      )}
    </Section>
  );
}
