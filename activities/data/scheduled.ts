/**
 * What the backup window's schedule runs (workflows/backups.ts scheduledBackups): a backup task of every
 * environment of the project that has data, and the deletion of snapshots past the retention.
 */
import type { Deps } from '../../system/deps';
import { BackupWindow } from '../../db/models/backup-window';
import { BackupDestination } from '../../db/models/backup-destination';
import { startBackupTask } from '../../core/backups/tasks';
import { deleteFromDestination } from '../../core/backups/destinations';
import { volumeHasFiles } from '../../db/queries/storage';

export async function startScheduledBackups(deps: Deps, projectId: string): Promise<string[]> {
  const window = await BackupWindow.query(deps.knex).findById(projectId);
  if (!window?.destination_id) return [];
  const envs = await deps
    .knex('environments')
    .where({ project_id: projectId })
    .select('id', 'team_id', 'project_id', 'name');
  const withService = new Set(
    (await deps
      .knex('services')
      .whereIn(
        'environment_id',
        envs.map((e: { id: string }) => e.id),
      )
      .where({ status: 'available' })
      .pluck('environment_id')) as string[],
  );
  const started: string[] = [];
  for (const env of envs) {
    if (!withService.has(env.id) && !(await volumeHasFiles(deps.knex, deps.config.storageRoots, env.id))) continue;
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
