import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ApiError, api, ok } from '../api/client';
import type { Environment } from '../api/types';
import { useAction, useLoad } from '../ui/hooks';
import { ErrorNote, LoadState, Section, Select, when } from '../ui/parts';
import { YourPassword } from '../ui/reauth';
import { ActionForm } from '../ui/action-form';
import { SyncSection } from './environment-more';
import { BackupKey, ResetDatabase } from './backup-key';
import { kindWords } from '../ui/choice-fields';
import { PointInTimeRestore } from './point-in-time';

/** "3 h ago", from an ISO time. */
export function ago(iso: string): string {
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

/** Beside a snapshot: what its last restore drill found ("verified 3 h ago", or the drill's error). */
export function DrillResult({ b }: { b: { verified_at: string | null; verify_error: string | null } }) {
  if (!b.verified_at) return <span class="muted">not verified yet</span>;
  if (b.verify_error)
    return (
      <span class="field-error" title={`Restore drill ${ago(b.verified_at)}`}>
        restore drill failed {ago(b.verified_at)}: {b.verify_error}
      </span>
    );
  return <span class="muted">verified {ago(b.verified_at)}</span>;
}

/** On the environment's overview: the newest snapshot's last drill, when it failed. */
export function DrillFailureNotice({ id }: { id: string }) {
  const list = useLoad(() => ok(api.GET('/environments/{id}/backups', { params: { path: { id } } })), [id], {
    later: true,
  });
  const drilled = list.data?.data.find((b) => b.verified_at);
  if (!drilled?.verify_error) return null;
  return (
    <p class="notice" role="alert">
      The restore drill of the snapshot of {when(drilled.created_at)} failed: {drilled.verify_error}.{' '}
      <a href={`/environments/${id}/backups`}>Backups</a>
    </p>
  );
}

export function BackupsPage({ env }: { env: Environment }) {
  const { route } = useLocation();
  const id = env.id;
  const path = { params: { path: { id } } };
  const list = useLoad(() => ok(api.GET('/environments/{id}/backups', path)), [id]);
  const destinations = useLoad(
    () => ok(api.GET('/teams/{id}/backup-destinations', { params: { path: { id: env.team_id } } })),
    [env.team_id],
  );
  const [destination, setDestination] = useState('');
  const [asking, setAsking] = useState<{ snapshot: string; what: 'restore' | 'reset' }>();
  const [password, setPassword] = useState('');
  const backUp = useAction(async () => {
    const destination_id = destination || destinations.data?.data[0]?.id;
    const body = destination_id ? { destination_id } : {};
    route(`/tasks/${(await ok(api.POST('/environments/{id}/backups', { ...path, body }))).id}`);
  });
  // A restore needs a recent sign-in (and, over a protected environment, the password): when the API
  // answers reauthentication_required, the password is asked, confirmed (POST /session/reauthenticate)
  // and sent along with the restore.
  const restore = useAction(async (snapshot: string, withPassword?: string) => {
    if (withPassword) await ok(api.POST('/session/reauthenticate', { body: { password: withPassword } }));
    try {
      const task = await ok(
        api.POST('/environments/{id}/backups/{snapshot}/restore', {
          params: { path: { id, snapshot } },
          body: withPassword ? { password: withPassword } : {},
        }),
      );
      route(`/tasks/${task.id}`);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'reauthentication_required' && !withPassword) {
        setAsking({ snapshot, what: 'restore' });
        return;
      }
      throw err;
    }
  });
  const verify = useAction(async (snapshot: string) => {
    const task = await ok(
      api.POST('/environments/{id}/backups/{snapshot}/verify', { params: { path: { id, snapshot } }, body: {} }),
    );
    route(`/tasks/${task.id}`);
  });
  const download = useAction(async (snapshot: string) => {
    const r = await ok(
      api.POST('/environments/{id}/backups/{snapshot}/download', { params: { path: { id, snapshot } }, body: {} }),
    );
    window.location.assign(r.url);
  });
  const remove = useAction(async (snapshot: string) => {
    if (!confirm('Delete this backup?')) return;
    await ok(api.DELETE('/environments/{id}/backups/{snapshot}', { params: { path: { id, snapshot } } }));
    await list.reload();
  });
  return (
    <>
      <Section title="Backups">
        {destinations.data && destinations.data.data.length === 0 && (
          <p class="notice">
            No backup destination yet: <a href={`/teams/${env.team_id}/backup-destinations`}>add one</a>.
          </p>
        )}
        {destinations.data && destinations.data.data.length > 0 && (
          <Select
            label="Destination"
            name="destination_id"
            value={destination || destinations.data.data[0].id}
            onChange={(e) => setDestination((e.target as HTMLSelectElement).value)}
            options={destinations.data.data.map((d) => ({ value: d.id, label: `${d.name} (${kindWords(d.kind)})` }))}
            error={backUp.error}
          />
        )}
        {destinations.data && destinations.data.data.length > 0 && (
          <button type="button" onClick={() => backUp.run()} disabled={backUp.busy}>
            Back up now
          </button>
        )}
        <ErrorNote error={backUp.error} />
        <LoadState load={list} what="backups" />
        <ul class="list">
          {list.data?.data.map((b) => (
            <li key={b.id}>
              <strong>{when(b.created_at)}</strong> <span class={`status ${b.status}`}>{b.status}</span>{' '}
              <span class="muted">
                {b.trigger}, {b.contents.join(' and ')}
                {b.size_bytes !== null && `, ${Math.ceil(b.size_bytes / 1024)} KB`}
              </span>{' '}
              {b.status === 'available' && <DrillResult b={b} />}
              {b.status === 'available' && (
                <span class="buttons">
                  <button type="button" onClick={() => restore.run(b.id)} disabled={restore.busy}>
                    Restore
                  </button>
                  <button type="button" class="secondary" onClick={() => verify.run(b.id)} disabled={verify.busy}>
                    Verify
                  </button>
                  <button type="button" class="secondary" onClick={() => download.run(b.id)}>
                    Download
                  </button>
                  <button type="button" class="danger" onClick={() => remove.run(b.id)}>
                    Delete
                  </button>
                </span>
              )}
            </li>
          ))}
        </ul>
        <ErrorNote error={restore.error ?? verify.error ?? download.error ?? remove.error} />
        {asking?.what === 'restore' && (
          <ActionForm class="card inset" onSubmit={() => restore.run(asking.snapshot, password)}>
            <p>Restoring replaces the environment's data. Confirm with your password.</p>
            <YourPassword value={password} onChange={setPassword} error={restore.error} />
            <button type="submit" disabled={restore.busy}>
              Restore
            </button>
          </ActionForm>
        )}
      </Section>
      <PointInTimeRestore env={env} />
      <div class="grid">
        <BackupKey id={id} />
        <ResetDatabase env={env} />
      </div>
      <SyncSection env={env} />
    </>
  );
}
