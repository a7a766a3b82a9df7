/**
 * The daily prune's part for deleted environments (CONTRACT "Running"): once a tombstone is
 * DELETED_ENVIRONMENT_KEEP_DAYS old, its snapshots are deleted from their destinations, what the release
 * store still holds of it goes (its retirement deleted that, unless its host never came back; and a move's or a
 * sync's copy that a store failure left), and its snapshot rows, tasks (with their logs), activity events and the
 * tombstone itself (its backup key with it) go.
 */
import type { Deps } from '../../system/deps';
import { BackupDestination } from '../../db/models/backup-destination';
import { deleteTombstone, tombstonesPastKeeping } from '../../db/queries/deleted-environments';
import { deleteEnvironmentActivity } from '../../db/queries/activity';
import { deleteEnvironmentTasks } from '../../db/queries/tasks';
import { deleteFromDestination } from '../../core/backups/destinations';
import { createReleaseStore, environmentKey } from '../../host/release-store';
import { storeCopiesOf } from '../data/store-copies';

/** Deletes the environment's snapshot objects where they are (a destination that fails is logged, not retried). */
async function deleteSnapshotObjects(deps: Deps, environmentId: string): Promise<void> {
  const rows = await deps
    .knex('backups')
    .where({ environment_id: environmentId })
    .whereNotNull('destination_id')
    .select('id', 'destination_id', 'object_key');
  for (const row of rows) {
    const destination = await BackupDestination.query(deps.knex).findById(row.destination_id);
    if (!destination) continue;
    try {
      await deleteFromDestination(deps, destination, row.object_key);
    } catch (err) {
      deps.logger.warn(
        { environmentId, snapshotId: row.id, err: (err as Error).message },
        'a pruned snapshot could not be deleted from its destination',
      );
    }
  }
}

/** Removes what deleted environments left once their keeping has ended as of `asOf`. Returns how many went. */
export async function pruneDeletedEnvironments(deps: Deps, asOf: Date): Promise<number> {
  const due = await tombstonesPastKeeping(deps.knex, asOf);
  for (const { id } of due) {
    await deleteSnapshotObjects(deps, id);
    // its releases, and any copy of its volume (a move's) or of a sync's files into it that a store failure left
    const store = createReleaseStore(deps.config.releaseStore);
    for (const prefix of [environmentKey(id), storeCopiesOf('moves', id), storeCopiesOf('syncs', id)]) {
      await store
        .deleteUnder(prefix)
        .catch((err) =>
          deps.logger.warn(
            { environmentId: id, prefix, err: (err as Error).message },
            'release store objects could not be deleted',
          ),
        );
    }
    await deps.knex.transaction(async (trx) => {
      await trx('backups').where({ environment_id: id }).delete();
      await deleteEnvironmentTasks(trx, id);
      await deleteEnvironmentActivity(trx, id);
      await deleteTombstone(trx, id);
    });
  }
  return due.length;
}
