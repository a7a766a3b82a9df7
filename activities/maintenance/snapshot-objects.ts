/**
 * The daily prune's part for snapshot objects left without a row (db/migrations/580_snapshot_object_deletions.ts):
 * a deleted project's snapshots. Each is deleted from its destination; one that fails stays queued with its
 * reason and is tried again the next day, and after QUEUED_DAYS_MAX days it is given up with a warning in the
 * worker's log (the destination is the team's own; its operator can remove the object by its key).
 */
import type { Deps } from '../../system/deps';
import { BackupDestination } from '../../db/models/backup-destination';
import { deleteFromDestination } from '../../core/backups/destinations';

const QUEUED_DAYS_MAX = 30;
const DAY_MS = 86_400_000;

/** Deletes the queued objects from their destinations; returns how many were deleted. */
export async function deleteQueuedSnapshotObjects(deps: Deps, asOf: Date): Promise<number> {
  const queued: Array<{ id: string; destination_id: string; object_key: string; attempts: number; queued_at: Date }> =
    await deps.knex('snapshot_object_deletions').orderBy('queued_at').limit(10_000);
  let deleted = 0;
  for (const row of queued) {
    const destination = await BackupDestination.query(deps.knex).findById(row.destination_id);
    try {
      if (destination) {
        await deleteFromDestination(deps, destination, row.object_key);
      }
      await deps.knex('snapshot_object_deletions').where({ id: row.id }).delete();
      deleted++;
    } catch (err) {
      const reason = (err as Error).message;
      if (asOf.getTime() - new Date(row.queued_at).getTime() >= QUEUED_DAYS_MAX * DAY_MS) {
        deps.logger.warn(
          { destinationId: row.destination_id, objectKey: row.object_key, err: reason },
          `a deleted project's snapshot could not be deleted from its destination in ${QUEUED_DAYS_MAX} days; given up`,
        );
        await deps.knex('snapshot_object_deletions').where({ id: row.id }).delete();
        continue;
      }
      await deps
        .knex('snapshot_object_deletions')
        .where({ id: row.id })
        .update({ attempts: row.attempts + 1, last_error: reason.slice(0, 500) });
    }
  }
  return deleted;
}
