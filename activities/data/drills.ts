/**
 * The restore drills' activities (core/backups/drills.ts says what a drill is for): verifySnapshot runs one
 * (restore-drill.ts), settleDrill records a drill that failed and removes whatever it left (also after its
 * worker was killed), startRestoreDrills is the `restore-drills` schedule's run.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { Deps } from '../../system/deps';
import { withTaskLog } from '../toolkit/task-log';
import { userFault } from '../toolkit/failures';
import { withHeartbeat } from '../toolkit/heartbeat';
import { BackupDestination } from '../../db/models/backup-destination';
import type { Backup } from '../../db/models/backup';
import { destinationSpec } from '../../core/backups/destinations';
import { snapshotKey } from '../../core/backups/keys';
import { recordDrillFailed, startRestoreDrills } from '../../core/backups/drills';
import { recordDrillPassed } from '../../db/queries/backups';
import { keyFingerprint } from '../../host/snapshot-format';
import { openStore, storedObject } from '../../host/destinations';
import { scratchName } from '../../host/pg-scratch';
import type { PartName } from '../../host/snapshot-format';
import { drillSnapshot, removeDrillScratch } from './restore-drill';

export function createDrillActivities(deps: Deps) {
  const { knex, config } = deps;
  return {
    /**
     * Restores the snapshot into scratch and compares it with what its backup recorded. Passed: the snapshot
     * is verified. Failed (whatever the cause: the object, its decryption, the restore, a difference): a
     * VerifyFailed fault with the reason, which the workflow records with settleDrill.
     */
    async verifySnapshot(input: { taskId: string; backupId: string }) {
      return withTaskLog(deps, input.taskId, (log) =>
        withHeartbeat(async () => {
          const row: Backup | undefined = await knex('backups').where({ id: input.backupId }).first();
          if (row?.status !== 'available') throw userFault('VerifyFailed', 'the snapshot is not available');
          try {
            const destination = row.destination_id
              ? await BackupDestination.query(knex).findById(row.destination_id)
              : undefined;
            if (!destination) throw new Error('the destination of the snapshot was deleted');
            const key = await snapshotKey(knex, deps.secrets, row.environment_id);
            if (keyFingerprint(key) !== row.key_fingerprint)
              throw new Error('the snapshot was taken under another backup key');
            log.line(`==> Restore drill of snapshot ${row.id} from "${destination.name}" (${destination.kind})`);
            const store = openStore(destinationSpec(deps, destination), config);
            try {
              const outcome = await drillSnapshot({
                config,
                store,
                objectKey: row.object_key,
                expected: storedObject(row),
                key,
                contents: row.contents as PartName[],
                recorded: row.counts,
                scratch: scratchName(input.taskId),
                onLine: (l) => log.line(l),
              });
              await recordDrillPassed(knex, row.id);
              log.line('==> Scratch database, role and directory removed; the snapshot is verified');
              return { backup_id: row.id, ...outcome };
            } finally {
              store.close();
            }
          } catch (err) {
            if (err instanceof ApplicationFailure) throw err;
            throw userFault('VerifyFailed', `the restore drill failed: ${(err as Error).message}`);
          }
        }),
      );
    },

    /** After a drill that failed (or whose worker was killed on its last attempt): removes its scratch, records it. */
    async settleDrill(input: { taskId: string; backupId: string; reason: string }): Promise<void> {
      await removeDrillScratch(config, scratchName(input.taskId));
      await recordDrillFailed(deps, input);
    },

    startRestoreDrills: () => startRestoreDrills(deps),
  };
}
