/**
 * The WAL archive's backups (host/pitr-archive.ts) as the worker takes them: the weekly full and daily
 * differential of the `pitr-*` schedules, and an incremental one after every service creation and every swap
 * (restore, sync, reset, reshape, storage move, point-in-time restore), so that the environment's current
 * database is in a backup and its recovery window opens. A server without PITR: nothing is taken.
 */
import { Context } from '@temporalio/activity';
import type { Deps } from '../../system/deps';
import type { Provider } from '../../host/provider';
import { withHeartbeat } from '../toolkit/heartbeat';
import { withTaskLog } from '../toolkit/task-log';
import { userFault } from '../toolkit/failures';
import { openArchive, takeArchiveBackup } from '../../host/pitr-archive';
import { dropKeptDatabase } from '../../host/pg-restore';
import { BackupDestination } from '../../db/models/backup-destination';
import { destinationSpec } from '../../core/backups/destinations';
import { snapshotKey } from '../../core/backups/keys';
import { keyFingerprint, decryptSnapshot, type PartName } from '../../host/snapshot-format';
import { openStore, storedObject, type ObjectStore } from '../../host/destinations';
import { startWorkflow } from '../../core/temporal-starts';
import { environmentVolume } from '../../db/queries/storage';
import { volumeOwner } from '../storage/volume-env';
import { restartWebAfterData } from './restart-web';
import { serviceLogin } from './service-env';
import { putBack } from './put-back';
import { clearScratch, keptDatabaseName, replayToSecond } from './pitr-restore';
import { isoSeconds } from '../../core/pitr-window';

const KEEP_HOURS = 24;

export function createPitrActivities(deps: Deps, provider: Provider) {
  const { knex, config } = deps;

  /** The newest available snapshot of the environment taken before `at` that holds files, or null. */
  async function snapshotBefore(envId: string, at: Date) {
    const rows = await knex('backups')
      .where({ environment_id: envId, status: 'available' })
      .where('created_at', '<=', at)
      .orderBy('created_at', 'desc');
    return rows.find((r) => (r.contents as string[] | null)?.includes('files')) ?? null;
  }

  /** The files part of a snapshot, decrypted as it streams (the database part is passed over). */
  async function* filesOf(store: ObjectStore, key: Buffer, row: Record<string, unknown>) {
    const body = await store.get(row.object_key as string, storedObject(row as never));
    try {
      for await (const p of decryptSnapshot(key, body)) if (p.part === 'files') yield p;
    } finally {
      body.destroy();
    }
  }

  return {
    /**
     * The restore to a second (activities/data/pitr-restore.ts): the database replayed in scratch, copied into a
     * fresh database with the volume of the newest snapshot before the second (none: left as it is), both swapped
     * in; the replaced database kept 24 hours; the app restarted.
     */
    async restorePointInTime(input: { taskId: string; environmentId: string; pointInTime: string }) {
      return withTaskLog(deps, input.taskId, (log) =>
        withHeartbeat(async (signal) => {
          const at = new Date(input.pointInTime);
          const login = await serviceLogin(deps, input.environmentId);
          if (!login) throw userFault('DataTaskFailed', 'the environment has no database service');
          const timings: Record<string, number> = {};
          const scratch = await replayToSecond(deps, {
            taskId: input.taskId,
            environmentId: input.environmentId,
            at,
            log,
            signal,
            attempt: Context.current().info.attempt,
          }).catch((err) => {
            throw userFault('RestoreFailed', `the restore failed: ${(err as Error).message}`);
          });
          Object.assign(timings, scratch.timings);
          let store: ObjectStore | null = null;
          try {
            const snapshot = await snapshotBefore(input.environmentId, at);
            const parts: AsyncIterable<{ part: PartName; data: Buffer }>[] = [];
            async function* dumped() {
              for await (const data of scratch.parts[0].source()) yield { part: 'database' as PartName, data };
            }
            parts.push(dumped());
            const destination = snapshot?.destination_id
              ? await BackupDestination.query(knex).findById(snapshot.destination_id)
              : undefined;
            if (snapshot && destination) {
              const key = await snapshotKey(knex, deps.secrets, snapshot.environment_id);
              if (keyFingerprint(key) !== snapshot.key_fingerprint)
                throw new Error(`snapshot ${snapshot.id} was taken under another backup key`);
              store = openStore(destinationSpec(deps, destination), config);
              parts.push(filesOf(store, key, snapshot));
              log.line(
                `==> The volume comes from snapshot ${snapshot.id}, taken ${isoSeconds(new Date(snapshot.created_at))}`,
              );
            } else {
              log.line('==> No snapshot with files was taken before that second: the volume is left as it is');
            }
            async function* all() {
              for (const p of parts) yield* p;
            }
            const keepAs = keptDatabaseName(login.database, new Date());
            const t0 = Date.now();
            const put = await putBack({
              config,
              target: {
                login,
                volume: await environmentVolume(knex, config.storageRoots, input.environmentId),
                owner: await volumeOwner(deps, provider, input.environmentId),
              },
              parts: all(),
              marker: input.taskId,
              keepAs,
              onLine: (l) => log.line(l),
            });
            timings.copy_and_swap = Date.now() - t0;
            log.line(
              `==> Put back: ${put.join(' and ')}; the replaced database is kept as ${keepAs} for ${KEEP_HOURS} h`,
            );
            await startWorkflow(deps, {
              workflow: 'dropKeptDatabaseLater',
              workflowId: `drop-kept-${keepAs}`,
              whenOpen: 'use_existing',
              args: [{ database: keepAs, dropAt: new Date(Date.now() + KEEP_HOURS * 3600_000).toISOString() }],
              summary: `Drop ${keepAs}, kept ${KEEP_HOURS} h after a point-in-time restore`,
            });
            await restartWebAfterData(deps, provider, input.environmentId, log);
            return { point_in_time: input.pointInTime, restored: put, kept: keepAs, timings_ms: timings };
          } catch (err) {
            throw userFault('RestoreFailed', `the restore failed: ${(err as Error).message}`);
          } finally {
            store?.close();
            await scratch.close();
          }
        }),
      );
    },

    /** After a point-in-time restore that failed for good: what its attempts left in scratch is stopped and removed. */
    async clearPitrScratch(input: { taskId: string }): Promise<void> {
      const { archive } = openArchive(deps.config, deps.secrets);
      if (archive) await clearScratch(archive, input.taskId);
    },

    /** Drops a database a point-in-time restore kept, its 24 hours over. */
    async dropKeptDatabase(input: { database: string }): Promise<void> {
      await dropKeptDatabase(config, input.database);
    },

    /** A scheduled backup of the archive; skipped (saying why) where the console runs no services server. */
    async archiveBackup(input: { type: 'full' | 'diff' }): Promise<{ taken: boolean; reason?: string }> {
      const { archive, reason } = openArchive(deps.config, deps.secrets);
      if (!archive) return { taken: false, reason };
      await withHeartbeat((signal) => takeArchiveBackup(archive, input.type, { signal }));
      return { taken: true };
    },

    /**
     * The incremental backup after a task's swap (or a service's creation), written in the task's log. It never
     * fails the task: the data is in place; only the recovery window waits for the next backup.
     */
    async archiveAfterSwap(input: { taskId: string }): Promise<{ taken: boolean }> {
      const { archive } = openArchive(deps.config, deps.secrets);
      if (!archive) return { taken: false };
      return withTaskLog(deps, input.taskId, (log) =>
        withHeartbeat(async (signal) => {
          log.line('==> Backing up the services server (incremental), so the recovery window holds this database');
          try {
            await takeArchiveBackup(archive, 'incr', { signal });
            log.line('==> Backed up');
            return { taken: true };
          } catch (err) {
            log.line(`==> The backup could not be taken (the next one will be): ${(err as Error).message}`);
            return { taken: false };
          }
        }),
      );
    },
  };
}

export type PitrActivities = ReturnType<typeof createPitrActivities>;
