import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ApiError, api, ok } from '../api/client';
import type { Environment } from '../api/types';
import { useAction, useLoad } from '../ui/hooks';
import { ErrorNote, Field, Section, Select } from '../ui/parts';
import { ActionForm } from '../ui/action-form';

/** Sync: copy another environment's data over this one (confirmed; the password where protected). */
export function SyncSection({ env }: { env: Environment }) {
  const { route } = useLocation();
  const path = { params: { path: { id: env.id } } };
  const sources = useLoad(() => ok(api.GET('/environments/{id}/sync', path)), [env.id]);
  const [from, setFrom] = useState('');
  const [password, setPassword] = useState('');
  const [askPassword, setAskPassword] = useState(env.protected);
  const sync = useAction(async () => {
    const from_environment_id = from || sources.data?.sources[0]?.environment_id || '';
    if (!confirm(`Replace the data of ${env.name} with a copy?`)) return;
    try {
      if (password) await ok(api.POST('/session/reauthenticate', { body: { password } }));
      const task = await ok(
        api.POST('/environments/{id}/sync', {
          ...path,
          body: { from_environment_id, confirm: true, ...(password ? { password } : {}) },
        }),
      );
      route(`/tasks/${task.id}`);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'reauthentication_required') setAskPassword(true);
      throw err;
    }
  });
  const list = sources.data?.sources ?? [];
  return (
    <Section title="Sync from another environment">
      <ErrorNote error={sources.error} />
      {sources.data && list.length === 0 && <p class="muted">No other environment to copy from.</p>}
      {list.length > 0 && (
        <ActionForm onSubmit={() => sync.run()}>
          <Select
            label="Copy the data of"
            name="from_environment_id"
            value={from || list[0].environment_id}
            onChange={(e) => setFrom((e.target as HTMLSelectElement).value)}
            options={list.map((s) => ({ value: s.environment_id, label: s.name }))}
            error={sync.error}
          />
          {askPassword && (
            <Field
              label="Your password"
              name="password"
              type="password"
              autocomplete="current-password"
              value={password}
              onInput={(e) => setPassword((e.target as HTMLInputElement).value)}
              error={sync.error}
            />
          )}
          <button type="submit" class="danger" disabled={sync.busy}>
            Sync
          </button>
          <ErrorNote error={sync.error} />
        </ActionForm>
      )}
    </Section>
  );
}
