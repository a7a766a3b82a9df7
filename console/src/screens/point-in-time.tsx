import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ApiError, api, ok } from '../api/client';
import type { Environment } from '../api/types';
import { ActionForm } from '../ui/action-form';
import { useAction, useLoad } from '../ui/hooks';
import { Check, Field, Section } from '../ui/parts';
import { YourPassword } from '../ui/reauth';

/** The browser's time zone ("Europe/Paris"), or "local time" when it does not say. */
const localZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || 'local time';

/** ISO seconds in UTC ("2026-11-29T03:04:05Z"), as the API takes and gives them. */
export const utcSeconds = (d: Date) => `${d.toISOString().slice(0, 19)}Z`;

/** A datetime-local value ("2026-11-29T04:04:05") of this instant in the browser's time zone. */
export function localValue(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** The UTC second a datetime-local value means in the browser's time zone; undefined when it is not one. */
export function toUtc(local: string): string | undefined {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(local)) return undefined;
  const d = new Date(local); // a date-time without an offset is local time
  return Number.isNaN(d.getTime()) ? undefined : utcSeconds(d);
}

/** A second of the window as a person reads it: in the browser's time zone, with its UTC beside it when they differ. */
const shown = (iso: string) => {
  const utc = iso.replace('T', ' ').replace(/Z$/, '');
  const local = localValue(new Date(iso)).replace('T', ' ');
  return local === utc ? `${utc} UTC` : `${local} (${utc} UTC)`;
};

/**
 * "Restore to a point in time": the recovery window (GET /environments/{id}/recovery-window), a local date and
 * time picked and sent in UTC (the value sent shown), confirmed, the password over a protected environment;
 * POST /environments/{id}/restore, then the task. Where the API answers 409 (no database, no point-in-time
 * recovery), its reason shows instead of the form.
 */
export function PointInTimeRestore({ env }: { env: Environment }) {
  const { route } = useLocation();
  const id = env.id;
  const range = useLoad(() => ok(api.GET('/environments/{id}/recovery-window', { params: { path: { id } } })), [id]);
  const [at, setAt] = useState('');
  const [confirmed, setConfirmed] = useState(false);
  const [askPassword, setAskPassword] = useState(env.protected);
  const [password, setPassword] = useState('');
  const utc = toUtc(at);
  const restore = useAction(async () => {
    if (password) await ok(api.POST('/session/reauthenticate', { body: { password } }));
    try {
      const task = await ok(
        api.POST('/environments/{id}/restore', {
          params: { path: { id } },
          // the field's own text goes as it is when it is not a date-time: the API names the field
          body: { point_in_time: utc ?? at, confirm: confirmed, ...(password ? { password } : {}) },
        }),
      );
      route(`/tasks/${task.id}`);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'reauthentication_required') setAskPassword(true);
      throw err;
    }
  });
  const refusal = range.error;
  return (
    <Section title="Restore to a point in time">
      {range.loading && !range.data && !refusal && (
        <p class="muted" aria-busy="true">
          Loading the recovery window…
        </p>
      )}
      {refusal !== undefined && (
        <p class="notice" data-pitr-unavailable>
          {refusal instanceof ApiError && refusal.status === 409
            ? refusal.code === 'no_database_service'
              ? 'This environment has no database service, so there is nothing to restore to a point in time.'
              : `${refusal.message}.`
            : `The recovery window could not be read: ${refusal instanceof Error ? refusal.message : String(refusal)}`}
        </p>
      )}
      {range.data && (
        <ActionForm action={restore}>
          <p>
            The database can be put back as it was at any second from <strong>{shown(range.data.earliest)}</strong> to{' '}
            <strong>{shown(range.data.latest)}</strong>. The replaced database is kept 24 hours.
          </p>
          <Field
            label={`Date and time (${localZone()})`}
            name="point_in_time"
            type="datetime-local"
            step={1}
            required
            value={at}
            onInput={(e) => setAt((e.target as HTMLInputElement).value)}
            error={restore.error}
          />
          <p role="status" aria-label="Time sent">
            {utc ? (
              <>
                Sent in UTC: <code data-utc>{utc}</code>
              </>
            ) : (
              <span class="muted">Pick a date and time; it is sent in UTC.</span>
            )}
          </p>
          <Check
            label="I understand the database is replaced by its past self"
            name="confirm"
            checked={confirmed}
            onChange={setConfirmed}
          />
          <ConfirmError error={restore.error} />
          {askPassword && <YourPassword value={password} onChange={setPassword} error={restore.error} />}
          <button type="submit" disabled={restore.busy}>
            Restore to this second
          </button>
        </ActionForm>
      )}
    </Section>
  );
}

/** The API's reason for refusing `confirm`, beside the check box. */
function ConfirmError({ error }: { error: unknown }) {
  const reason = error instanceof ApiError ? error.fields.confirm : undefined;
  return reason ? <small class="field-error">{reason}</small> : null;
}
