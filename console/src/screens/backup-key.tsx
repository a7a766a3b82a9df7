import { useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import type { Environment } from '../api/types';
import { useAction, useLoad } from '../ui/hooks';
import { CopyButton, ErrorNote, Field, Section } from '../ui/parts';
import { ActionForm } from '../ui/action-form';
import { PasswordField, useReauth } from '../ui/reauth';
import { useTaskRoute } from '../ui/tasks';

/** The backup key: what it opens; its reveal (logged in the activity) asks for the password where needed. */
export function BackupKey({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const key = useLoad(() => ok(api.GET('/environments/{id}/backup-key', path)), [id]);
  const [revealed, setRevealed] = useState<string>();
  const reauth = useReauth();
  const reveal = useAction(async () => {
    const r = await reauth.run(() => ok(api.POST('/environments/{id}/backup-key', { ...path, body: {} })));
    if (r) setRevealed(r.key);
  });
  return (
    <Section title="Backup key">
      {key.data ? (
        <p>
          {key.data.algorithm}, fingerprint <code class="break">{key.data.fingerprint}</code>; opens{' '}
          {key.data.opens.snapshots} backup{key.data.opens.snapshots === 1 ? '' : 's'}.
        </p>
      ) : (
        <ErrorNote error={key.error} />
      )}
      {revealed ? (
        <div class="notice" role="status">
          <p>The key (this reveal is in the activity log):</p>
          <p>
            <code class="break" data-backup-key>
              {revealed}
            </code>{' '}
            <CopyButton text={revealed} />
          </p>
        </div>
      ) : (
        <ActionForm onSubmit={() => reveal.run()}>
          <PasswordField reauth={reauth} error={reveal.error} />
          <button type="submit" class="secondary" disabled={reveal.busy}>
            Reveal the key (logged)
          </button>
          <ErrorNote error={reveal.error} />
        </ActionForm>
      )}
    </Section>
  );
}

/** Reset the database: the environment's name typed to confirm; the password over a protected environment. */
export function ResetDatabase({ env }: { env: Environment }) {
  // Offered only where there is a database to reset: the environment's PostgreSQL service.
  const services = useLoad(
    () => ok(api.GET('/environments/{id}/services', { params: { path: { id: env.id } } })),
    [env.id],
  );
  if (!services.data) return null;
  if (!services.data.data.some((s) => s.kind === 'postgresql' && s.status === 'available'))
    return (
      <Section title="Reset the database">
        <p>
          There is no database to reset: {env.name} has no PostgreSQL database service ready. Add one under Services.
        </p>
      </Section>
    );
  return <ResetDatabaseForm env={env} />;
}

function ResetDatabaseForm({ env }: { env: Environment }) {
  const toTask = useTaskRoute();
  const [typed, setTyped] = useState('');
  // Over a protected environment the API asks for the password (reauthentication_required): then it is asked.
  const reauth = useReauth();
  const reset = useAction(async () => {
    const task = await reauth.run((password) =>
      ok(
        api.POST('/environments/{id}/reset-database', {
          params: { path: { id: env.id } },
          body: { confirm: typed, ...(password ? { password } : {}) },
        }),
      ),
    );
    if (task) toTask(task);
  });
  return (
    <Section title="Reset the database">
      <ActionForm onSubmit={() => reset.run()}>
        <p>Leaves the database of {env.name} empty.</p>
        <Field
          label={`Type "${env.name}" to confirm`}
          name="confirm"
          autocomplete="off"
          value={typed}
          onInput={(e) => setTyped((e.target as HTMLInputElement).value)}
          error={reset.error}
        />
        <PasswordField reauth={reauth} error={reset.error} />
        <button type="submit" class="danger" disabled={reset.busy || typed !== env.name}>
          Reset database
        </button>
        <ErrorNote error={reset.error} />
      </ActionForm>
    </Section>
  );
}
