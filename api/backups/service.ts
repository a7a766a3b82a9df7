/**
 * Snapshots of an environment (list, delete, download URLs), its backup key, and a project's backup window.
 * Taking, restoring and syncing are tasks (./tasks.ts). The environment comes from the route's scope: the
 * router has already found it in the caller's team and checked the route's permission there.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Deps } from '../../system/deps';
import { Backup } from '../../db/models/backup';
import { BackupDestination } from '../../db/models/backup-destination';
import { BackupWindow } from '../../db/models/backup-window';
import type { Environment } from '../../db/models/environment';
import type { Actor } from '../../core/actor';
import { errors } from '../../core/errors';
import { isoOrNull } from '../../core/time';
import { findProject } from '../projects/service';
import type { Readable } from 'node:stream';
import { ObjectMismatch, openStore, storedObject } from '../../host/destinations';
import { deleteFromDestination, destinationSpec } from '../../core/backups/destinations';
import { ensureBackupKey, keyFingerprint } from '../../core/backups/keys';
import { recordBackupsEvent } from './events';
import { syncBackupSchedule, deleteBackupSchedule } from '../../core/schedules';
import { isKeptDeletedEnvironment } from '../../db/queries/deleted-environments';
import { deleteSnapshotRow, snapshotsUnderKey } from '../../db/queries/backups';

export const DOWNLOAD_TTL_SECONDS = 15 * 60;

type EnvRow = Pick<Environment, 'id' | 'team_id' | 'project_id' | 'name'>;

export async function listBackups(deps: Deps, env: EnvRow) {
  const rows = await Backup.query(deps.knex)
    .where({ environment_id: env.id })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ]);
  return rows;
}

/**
 * The environment's snapshot; with `orDeleted`, also one of a deleted environment of its project still kept
 * (restore into another environment, CONTRACT "Running").
 */
async function loadSnapshot(deps: Deps, env: EnvRow, snapshotId: string, orDeleted = false) {
  const row = await Backup.query(deps.knex).findOne({ id: snapshotId, project_id: env.project_id });
  const ours =
    row &&
    (row.environment_id === env.id ||
      (orDeleted && (await isKeptDeletedEnvironment(deps.knex, env.project_id, row.environment_id))));
  if (!row || !ours) throw errors.notFound('snapshot');
  return row;
}

/** A snapshot that can be read back: available, at a destination that still exists. */
export async function availableSnapshot(deps: Deps, env: EnvRow, snapshotId: string, orDeleted = false) {
  const row = await loadSnapshot(deps, env, snapshotId, orDeleted);
  if (row.status !== 'available')
    throw errors.conflict('snapshot_not_available', `The snapshot is ${row.status}, not available`);
  const destination = row.destination_id
    ? await BackupDestination.query(deps.knex).findById(row.destination_id)
    : undefined;
  if (!destination) throw errors.conflict('snapshot_not_available', 'The destination of this snapshot was deleted');
  return { row, destination };
}

export async function deleteBackup(deps: Deps, actor: Actor, env: EnvRow, snapshotId: string, address: string) {
  const row = await loadSnapshot(deps, env, snapshotId);
  if (row.status === 'running') throw errors.conflict('snapshot_running');
  const destination = row.destination_id
    ? await BackupDestination.query(deps.knex).findById(row.destination_id)
    : undefined;
  if (destination) {
    await deleteFromDestination(deps, destination, row.object_key);
  }
  await deps.knex.transaction(async (trx) => {
    await deleteSnapshotRow(trx, row.id);
    await recordBackupsEvent(trx, {
      teamId: env.team_id,
      actor,
      type: 'backup_deleted',
      projectId: env.project_id,
      environmentId: env.id,
      address,
      summary: `Snapshot ${row.id} of ${env.name} deleted`,
    });
  });
}

// ---- downloads: a URL signed for 15 minutes -------------------------------------------------------

function downloadSignature(deps: Deps, snapshotId: string, expires: number): string {
  return createHmac('sha256', deps.secrets.encryptionKey.key)
    .update(`snapshot-download:${snapshotId}:${expires}`)
    .digest('hex');
}

export async function downloadUrl(deps: Deps, env: EnvRow, snapshotId: string) {
  await availableSnapshot(deps, env, snapshotId);
  const expires = Math.floor(Date.now() / 1000) + DOWNLOAD_TTL_SECONDS;
  const signature = downloadSignature(deps, snapshotId, expires);
  return {
    url: `${deps.config.baseUrl}/api/vc/v1/snapshots/${snapshotId}/file?expires=${expires}&signature=${signature}`,
    expires_at: new Date(expires * 1000).toISOString(),
  };
}

/** The encrypted snapshot as a stream, when the URL's signature holds and has not expired (else 403). */
export async function openDownload(deps: Deps, snapshotId: string, q: { expires: number; signature: string }) {
  const expected = Buffer.from(downloadSignature(deps, snapshotId, q.expires));
  const given = Buffer.from(q.signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    throw errors.forbidden('The download URL is not valid');
  if (q.expires * 1000 < Date.now()) throw errors.forbidden('The download URL has expired; ask for a new one');
  const row = await Backup.query(deps.knex).findById(snapshotId);
  const destination = row?.destination_id
    ? await BackupDestination.query(deps.knex).findById(row.destination_id)
    : undefined;
  if (row?.status !== 'available' || !destination) throw errors.notFound('snapshot');
  const store = openStore(destinationSpec(deps, destination), deps.config);
  let body: Readable;
  try {
    // not a byte before the object is found to be the one stored (size and SHA-256 of the row)
    body = await store.get(row.object_key, storedObject(row));
  } catch (err) {
    store.close();
    if (err instanceof ObjectMismatch)
      throw errors.conflict('snapshot_not_available', `The stored snapshot cannot be served: ${err.message}`);
    const code = (err as { code?: string; name?: string }).code ?? (err as { name?: string }).name;
    if (code === 'ENOENT' || code === 'NoSuchKey') throw errors.conflict('snapshot_not_available');
    throw err;
  }
  body.once('close', () => store.close());
  return {
    body,
    size: row.size_bytes === null ? undefined : Number(row.size_bytes),
    filename: `snapshot-${row.id}.vcb`,
  };
}

// ---- backup key ---------------------------------------------------------------------------------

export async function describeBackupKey(deps: Deps, env: EnvRow) {
  const fingerprint = keyFingerprint(await ensureBackupKey(deps.knex, deps.secrets, env.id));
  const opens = await snapshotsUnderKey(deps.knex, env.id, fingerprint);
  return {
    algorithm: 'AES-256-GCM' as const,
    fingerprint,
    opens: { snapshots: opens.snapshots, oldest: isoOrNull(opens.oldest), newest: isoOrNull(opens.newest) },
  };
}

export async function revealBackupKey(deps: Deps, actor: Actor, env: EnvRow, address: string) {
  const key = await ensureBackupKey(deps.knex, deps.secrets, env.id);
  await deps.knex.transaction((trx) =>
    recordBackupsEvent(trx, {
      teamId: env.team_id,
      actor,
      type: 'backup_key_revealed',
      projectId: env.project_id,
      environmentId: env.id,
      address,
      summary: `Backup key of ${env.name} revealed to ${actor.user.name} from ${address}`,
    }),
  );
  return { key: key.toString('base64') };
}

// ---- backup window --------------------------------------------------------------------------------

export async function getBackupWindow(deps: Deps, actor: Actor, projectId: string) {
  await findProject(deps, actor, projectId, 'data:read');
  return { window: await BackupWindow.query(deps.knex).findById(projectId) };
}

export async function setBackupWindow(
  deps: Deps,
  actor: Actor,
  projectId: string,
  input: { hour_utc: number; retention_days: number; destination_id: string },
  address: string,
) {
  const { project } = await findProject(deps, actor, projectId, 'data:write');
  const destination = await BackupDestination.query(deps.knex).findById(input.destination_id);
  if (!destination || destination.team_id !== project.team_id)
    throw errors.invalid({ destination_id: "is not a backup destination of the project's team" });
  const row = await deps.knex.transaction(async (trx) => {
    await trx('backup_windows')
      .insert({ project_id: projectId, ...input })
      .onConflict('project_id')
      .merge({ ...input, updated_at: trx.fn.now() });
    await recordBackupsEvent(trx, {
      teamId: project.team_id,
      actor,
      type: 'backup_window_set',
      projectId,
      address,
      summary: `Backups of ${project.name} daily at ${String(input.hour_utc).padStart(2, '0')}:00 UTC to "${destination.name}", kept ${input.retention_days} days`,
    });
    return BackupWindow.query(trx).findById(projectId);
  });
  await syncBackupSchedule(deps, projectId, input.hour_utc);
  return { window: row };
}

export async function resetBackupWindow(deps: Deps, actor: Actor, projectId: string, address: string) {
  const { project } = await findProject(deps, actor, projectId, 'data:write');
  await deps.knex.transaction(async (trx) => {
    const n = await trx('backup_windows').where({ project_id: projectId }).delete();
    if (n)
      await recordBackupsEvent(trx, {
        teamId: project.team_id,
        actor,
        type: 'backup_window_reset',
        projectId,
        address,
        summary: `Backup window of ${project.name} back to the default`,
      });
  });
  await deleteBackupSchedule(deps, projectId);
  return { window: undefined };
}
