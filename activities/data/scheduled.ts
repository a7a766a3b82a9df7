/**
 * What the backup window's schedule runs (workflows/backups.ts scheduledBackups): a backup task of every
 * environment of the project that has data, and the deletion of snapshots past the retention.
 */
import { randomUUID } from 'node:crypto';
import type { Deps } from '../../system/deps';
import { BackupWindow } from '../../db/models/backup-window';
import { BackupDestination } from '../../db/models/backup-destination';
import { startBackupTask } from '../../core/backups/tasks';
import { assertDestinationReachable, deleteFromDestination } from '../../core/backups/destinations';
import { ensureBackupKey } from '../../core/backups/keys';
import { AppError } from '../../core/errors';
import { keyFingerprint } from '../../host/snapshot-format';
import { volumeHasFiles, volumeReading } from '../../db/queries/storage';
import { environmentHost } from '../../db/queries/hosts';
import { lastVolumeBytes } from '../../db/queries/resources';

/**
 * The schedule runs in the control plane's worker (npm start's: its HOST_NAME is the API's). A `local` window
 * destination is on this machine: for an environment placed on another host, no task is started (as the API
 * refuses one, `local_destination_elsewhere`), and the refusal is kept as a failed scheduled snapshot with its
 * reason, so that the team sees in its backups why the night's snapshot is missing.
 */
export async function startScheduledBackups(
  deps: Deps,
  projectId: string,
  /** What the environments' own hosts answered (volumesToAsk): whether each volume holds files, by environment id. */
  answered: Record<string, boolean> = {},
): Promise<string[]> {
  const window = await BackupWindow.query(deps.knex).findById(projectId);
  if (!window?.destination_id) return [];
  const destination = await BackupDestination.query(deps.knex).findById(window.destination_id);
  if (!destination) return [];
  const { envs, withService } = await projectEnvironments(deps, projectId);
  const started: string[] = [];
  for (const env of envs) {
    if (!withService.has(env.id) && !(answered[env.id] ?? (await volumeHoldsData(deps, env.id)))) continue;
    const refusal = await assertDestinationReachable(deps, env.id, destination, `No scheduled backup of ${env.name}`)
      .then(() => null)
      .catch((err) => {
        if (err instanceof AppError) return err.message;
        throw err;
      });
    if (refusal) {
      await recordRefusedBackup(deps, env, destination.id, refusal);
      continue;
    }
    const task = await startBackupTask(
      deps,
      { via: 'schedule', userId: null },
      env,
      window.destination_id,
      'scheduled',
    );
    started.push(task.id);
  }
  return started;
}

/** Deletes the project's snapshots older than the window's retention (from their destination, then the row). */
export async function pruneSnapshots(deps: Deps, projectId: string): Promise<number> {
  const window = await BackupWindow.query(deps.knex).findById(projectId);
  if (!window) return 0;
  const old = await deps
    .knex('backups')
    .where({ project_id: projectId })
    .whereIn('status', ['available', 'failed'])
    .where('created_at', '<', deps.knex.raw(`now() - make_interval(days => ?)`, [window.retention_days]));
  let deleted = 0;
  for (const row of old) {
    const destination = row.destination_id
      ? await BackupDestination.query(deps.knex).findById(row.destination_id)
      : undefined;
    if (destination) {
      await deleteFromDestination(deps, destination, row.object_key);
    }
    await deps.knex('backups').where({ id: row.id }).delete();
    deleted++;
  }
  return deleted;
}

/** A scheduled snapshot that was not taken, kept `failed` with the reason (no object is written). */
async function recordRefusedBackup(
  deps: Deps,
  env: { id: string; team_id: string; project_id: string },
  destinationId: string,
  reason: string,
) {
  const id = randomUUID();
  const key = await ensureBackupKey(deps.knex, deps.secrets, env.id);
  await deps.knex('backups').insert({
    id,
    team_id: env.team_id,
    project_id: env.project_id,
    environment_id: env.id,
    destination_id: destinationId,
    status: 'failed',
    trigger: 'scheduled',
    object_key: `${env.id}/${id}.vcb`,
    key_fingerprint: keyFingerprint(key),
    error: reason,
    finished_at: deps.knex.fn.now(),
  });
}

/** The project's environments, and those of them with an available database service. */
async function projectEnvironments(deps: Deps, projectId: string) {
  const envs: Array<{ id: string; team_id: string; project_id: string; name: string }> = await deps
    .knex('environments')
    .where({ project_id: projectId })
    .select('id', 'team_id', 'project_id', 'name');
  const withService = new Set(
    (await deps
      .knex('services')
      .whereIn(
        'environment_id',
        envs.map((e) => e.id),
      )
      .where({ status: 'available' })
      .pluck('environment_id')) as string[],
  );
  return { envs, withService };
}

/**
 * The environments of a project with a backup window whose volume's own host must be asked whether it holds files
 * (workflows/data.ts scheduledBackups asks each on its host queue): those without a database whose last sample
 * does not say the volume holds files. Samples come every RESOURCE_SAMPLE_SECONDS: a volume that got its first
 * files since would be skipped for the night. Every host's worker polls the shared queue this runs on, so the
 * question goes to the volume's host whichever machine runs this. `lostSeconds` bounds how long it waits.
 */
export async function volumesToAsk(
  deps: Deps,
  projectId: string,
): Promise<{ ask: Array<{ environmentId: string; host: string }>; lostSeconds: number }> {
  const window = await BackupWindow.query(deps.knex).findById(projectId);
  const ask: Array<{ environmentId: string; host: string }> = [];
  if (window?.destination_id) {
    const { envs, withService } = await projectEnvironments(deps, projectId);
    for (const env of envs) {
      if (withService.has(env.id)) continue;
      const host = await environmentHost(deps.knex, env.id);
      if (!host) continue;
      const bytes = await lastVolumeBytes(deps.knex, env.id);
      if (bytes === null || bytes === 0) ask.push({ environmentId: env.id, host: host.name });
    }
  }
  return { ask, lostSeconds: deps.config.hostLostSeconds };
}

/**
 * Whether the environment's volume holds anything: read here for an environment on this machine (or not
 * placed); for one on another host, from its last sample (written by that host's sampler), when its host was not
 * asked or did not answer. No such sample: it may hold data, so it is backed up.
 */
async function volumeHoldsData(deps: Deps, envId: string): Promise<boolean> {
  const volume = await volumeReading(deps.knex, deps.config.hostName, envId);
  if (volume.here) return volumeHasFiles(deps.knex, deps.config.storageRoots, envId);
  return volume.sampledBytes === null || volume.sampledBytes > 0;
}
