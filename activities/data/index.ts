/**
 * The data area's activities on the local provider: creating database services, taking snapshots to a
 * destination, putting them back (restore), copying one environment's data into another (sync), emptying a
 * database (reset), and what the backup window's schedule runs. Long ones heartbeat, so a worker that dies is
 * noticed and the activity retried; every put-back swaps the new data in only once it is complete.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { Deps } from '../../system/deps';
import { type TaskLog, withTaskLog } from '../toolkit/task-log';
import { type UserFault, userFault } from '../toolkit/failures';
import { withHeartbeat } from '../toolkit/heartbeat';
import type { Provider } from '../../host/provider';
import { BackupDestination } from '../../db/models/backup-destination';
import { destinationRefusal, destinationSpec, recordDestinationError } from '../../core/backups/destinations';
import { ensureBackupKey, snapshotKey } from '../../core/backups/keys';
import { isKeptDeletedEnvironment } from '../../db/queries/deleted-environments';
import { keyFingerprint, type PartName } from '../../host/snapshot-format';
import { openStore, storedObject } from '../../host/destinations';
import { copyData, restoreSnapshot, takeSnapshot } from './backup-engine';
import { describePutBackState, settlePutBack } from './put-back';
import { environmentVolume } from '../../db/queries/storage';
import { volumeOwner } from '../storage/volume-env';
import { restartWebAfterData } from './restart-web';
import { createServiceDatabase } from '../../host/pg-server';
import { recreateServiceDatabase } from '../../host/pg-restore';
import { serviceLogin } from './service-env';
import { startScheduledBackups, pruneSnapshots, volumesToAsk } from './scheduled';
import { endSubscriptionsOf } from '../../db/queries/subscriptions';
import { createDrillActivities } from './drills';
import { dropStoreCopies, mib, putVolumeCopy, storeCopyKey, withVolumeCopy } from './store-copies';

/** The store key of a sync's copy of its source's files (`syncs/<target>/<task>.vcb`). */
const syncCopyKey = (input: { taskId: string; environmentId: string }) =>
  storeCopyKey('syncs', input.environmentId, input.taskId);

const withLog = <T>(deps: Deps, taskId: string, fn: (log: TaskLog) => Promise<T>) => withTaskLog(deps, taskId, fn);

const fail = (message: string, type: UserFault = 'DataTaskFailed') => userFault(type, message);

export function createDataActivities(deps: Deps, provider: Provider) {
  const { knex, config } = deps;
  const source = async (envId: string) => ({
    login: await serviceLogin(deps, envId),
    volume: await environmentVolume(knex, config.storageRoots, envId),
    owner: await volumeOwner(deps, provider, envId),
  });

  const restartWeb = (envId: string, log: TaskLog, taskId?: string) =>
    restartWebAfterData(deps, provider, envId, log, taskId);

  return {
    async createServiceDatabase(input: { taskId: string; serviceId: string }): Promise<{ database: string }> {
      return withLog(deps, input.taskId, async (log) => {
        const row = await knex('services').where({ id: input.serviceId }).first();
        if (!row) throw fail('the service no longer exists');
        const login = await serviceLogin(deps, row.environment_id, ['creating', 'available', 'failed']);
        log.line(`==> Creating PostgreSQL database ${row.database_name} with its own role`);
        await createServiceDatabase(config, login!);
        await knex('services').where({ id: row.id }).update({ status: 'available', updated_at: knex.fn.now() });
        log.line('==> The environment gets DATABASE_URL and PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE');
        await restartWeb(row.environment_id, log);
        return { database: row.database_name };
      });
    },

    /**
     * The backup's last attempt ended without saying so itself (its worker killed): the snapshot is marked
     * failed and whatever its attempts left at the destination (a half-written object) is removed.
     */
    async markBackupFailed(input: { backupId: string; error: string }): Promise<void> {
      const row = await knex('backups').where({ id: input.backupId }).first();
      await knex('backups')
        .where({ id: input.backupId, status: 'running' })
        .update({ status: 'failed', error: input.error, finished_at: knex.fn.now() });
      const destination = row?.destination_id && (await BackupDestination.query(knex).findById(row.destination_id));
      if (!row || row.status === 'available' || !destination) return;
      const store = openStore(destinationSpec(deps, destination), deps.config);
      try {
        await store.delete(row.object_key).catch(() => undefined);
      } finally {
        store.close();
      }
    },

    /** The service never came to be: failed, and its subscription ends (nothing is billed for it). */
    async markServiceFailed(input: { serviceId: string }): Promise<void> {
      await knex.transaction(async (trx) => {
        const n = await trx('services')
          .where({ id: input.serviceId, status: 'creating' })
          .update({ status: 'failed', updated_at: knex.fn.now() });
        if (n > 0) await endSubscriptionsOf(trx, 'service', input.serviceId);
      });
    },

    /** Takes the snapshot (its row `running` until the object is complete; then `available`, or `failed`). */
    async takeBackup(input: {
      taskId: string;
      backupId: string;
      environmentId: string;
      destinationId: string;
      trigger: 'manual' | 'scheduled';
    }) {
      return withLog(deps, input.taskId, (log) =>
        withHeartbeat(async (signal) => {
          const env = await knex('environments').where({ id: input.environmentId }).first();
          if (!env) throw fail('the environment no longer exists');
          const destination = await BackupDestination.query(knex).findById(input.destinationId);
          if (!destination) throw fail('the backup destination no longer exists');
          const key = await ensureBackupKey(knex, deps.secrets, env.id);
          const objectKey = `${env.id}/${input.backupId}.vcb`;
          await knex.raw(
            `INSERT INTO backups (id, team_id, project_id, environment_id, destination_id, task_id, status, trigger, object_key, key_fingerprint)
             VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?) ON CONFLICT (id) DO UPDATE SET status = 'running', error = NULL`,
            [
              input.backupId,
              env.team_id,
              env.project_id,
              env.id,
              destination.id,
              input.taskId,
              input.trigger,
              objectKey,
              keyFingerprint(key),
            ],
          );
          const refusal = await destinationRefusal(deps, destination);
          if (refusal) {
            await knex('backups')
              .where({ id: input.backupId })
              .update({ status: 'failed', error: refusal, finished_at: knex.fn.now() });
            await recordDestinationError(knex, destination.id, refusal);
            throw fail(refusal, 'BackupRefused');
          }
          const src = await source(env.id);
          log.line(
            `==> Snapshot ${input.backupId} of ${env.name} to "${destination.name}" (${destination.kind}): ${src.login ? 'database and files' : 'files'}`,
          );
          const store = openStore(destinationSpec(deps, destination), deps.config);
          try {
            const taken = await takeSnapshot({ config, volumes: provider, source: src, key, store, objectKey, signal });
            await knex('backups')
              .where({ id: input.backupId })
              .update({
                status: 'available',
                size_bytes: taken.sizeBytes,
                sha256: taken.sha256,
                contents: JSON.stringify(taken.contents),
                counts: JSON.stringify(taken.counts),
                finished_at: knex.fn.now(),
              });
            await recordDestinationError(knex, destination.id, null);
            log.line(`==> Stored ${taken.sizeBytes} bytes (encrypted), sha256 ${taken.sha256}`);
            return { backup_id: input.backupId, size_bytes: taken.sizeBytes, sha256: taken.sha256 };
          } catch (err) {
            const message = `the snapshot could not be taken: ${(err as Error).message}`;
            await knex('backups')
              .where({ id: input.backupId })
              .update({ status: 'failed', error: message, finished_at: knex.fn.now() });
            await store.delete(objectKey).catch(() => undefined);
            await recordDestinationError(knex, destination.id, message);
            throw fail(message, 'BackupFailed');
          } finally {
            store.close();
          }
        }),
      );
    },

    async restoreBackup(input: { taskId: string; backupId: string; environmentId: string }) {
      return withLog(deps, input.taskId, (log) =>
        withHeartbeat(async () => {
          // its own snapshot, or one a deleted environment of its project left (api/backups/task-service.ts checked it)
          const target = await knex('environments').where({ id: input.environmentId }).first('project_id');
          const row = await knex('backups').where({ id: input.backupId }).first();
          const ours =
            row &&
            target &&
            (row.environment_id === input.environmentId ||
              (await isKeptDeletedEnvironment(knex, target.project_id, row.environment_id)));
          if (!ours || row?.status !== 'available') throw fail('the snapshot is not available');
          const destination = row.destination_id
            ? await BackupDestination.query(knex).findById(row.destination_id)
            : undefined;
          if (!destination) throw fail('the destination of the snapshot was deleted');
          const key = await snapshotKey(knex, deps.secrets, row.environment_id);
          if (keyFingerprint(key) !== row.key_fingerprint)
            throw fail('the snapshot was taken under another backup key');
          const store = openStore(destinationSpec(deps, destination), deps.config);
          try {
            log.line(
              `==> Restoring snapshot ${row.id} (${(row.contents as string[]).join(' and ')}); the live data stays until it is complete`,
            );
            const parts = await restoreSnapshot({
              config,
              target: await source(input.environmentId),
              key,
              store,
              objectKey: row.object_key,
              expected: storedObject(row),
              marker: input.taskId,
              onLine: (l) => log.line(l),
            });
            log.line(`==> Put back: ${parts.join(' and ')}`);
            await restartWeb(input.environmentId, log, input.taskId);
            return { backup_id: row.id, restored: parts };
          } catch (err) {
            if (err instanceof ApplicationFailure) throw err;
            throw fail(`the restore failed: ${(err as Error).message}`, 'RestoreFailed');
          } finally {
            store.close();
          }
        }),
      );
    },

    /**
     * On the source's host, when the target is on another: a copy of the source's files goes to the release store
     * for the target's host (its web process keeps running, as for a sync on one host).
     */
    async copySyncFilesOut(input: { taskId: string; fromEnvironmentId: string; environmentId: string }) {
      return withLog(deps, input.taskId, (log) =>
        withHeartbeat(async () => {
          const volume = await environmentVolume(knex, config.storageRoots, input.fromEnvironmentId);
          const storeKey = syncCopyKey(input);
          const bytes = await putVolumeCopy(deps, provider, { volume, keyOf: input.fromEnvironmentId, storeKey });
          log.line(`==> The source's files were copied out on its machine, through the release store (${mib(bytes)})`);
          return { bytes };
        }),
      );
    },

    /**
     * The copy of a sync's source files is deleted from the store (the sync ended, either way), with any copy an
     * earlier sync into the same environment left there.
     */
    async dropSyncCopy(input: { taskId: string; environmentId: string }): Promise<void> {
      await dropStoreCopies(provider, 'syncs', input.environmentId);
    },

    /**
     * Puts the source's data into the environment: its database, and its files from its volume here, or from the
     * copy copySyncFilesOut made (`filesThroughStore`: the source is on another host).
     */
    async syncData(input: {
      taskId: string;
      fromEnvironmentId: string;
      environmentId: string;
      filesThroughStore?: boolean;
    }) {
      return withLog(deps, input.taskId, (log) =>
        withHeartbeat(async () => {
          const from = await knex('environments').where({ id: input.fromEnvironmentId }).first('name');
          if (!from) throw fail('the source environment no longer exists');
          log.line(`==> Copying the data of ${from.name} in; the live data stays until the copy is complete`);
          try {
            const copy = async (files?: AsyncIterable<{ part: PartName; data: Buffer }>) =>
              copyData({
                config,
                volumes: provider,
                source: await source(input.fromEnvironmentId),
                files,
                target: await source(input.environmentId),
                marker: input.taskId,
                onLine: (l) => log.line(l),
              });
            const missing = () => fail("the copy of the source's files is not in the release store", 'SyncFailed');
            const parts = input.filesThroughStore
              ? await withVolumeCopy(
                  deps,
                  provider,
                  { keyOf: input.fromEnvironmentId, storeKey: syncCopyKey(input), missing },
                  copy,
                )
              : await copy();
            log.line(`==> Copied: ${parts.join(' and ')}`);
            await restartWeb(input.environmentId, log);
            return { from_environment_id: input.fromEnvironmentId, copied: parts };
          } catch (err) {
            // the release store's failures are the host's: retried as they are
            if (err instanceof ApplicationFailure && !err.nonRetryable) throw err;
            throw fail(`the sync failed: ${(err as Error).message}`, 'SyncFailed');
          }
        }),
      );
    },

    /**
     * After a restore or sync that failed (or whose worker was killed on its last attempt): removes its staging
     * copies, rolls back a swap cut half way, and says in the task what the environment's data now is.
     */
    async settlePutBack(input: { taskId: string; environmentId: string; what: 'restore' | 'sync' }) {
      return withLog(deps, input.taskId, async (log) => {
        const state = await settlePutBack({ config, target: await source(input.environmentId), marker: input.taskId });
        const summary = describePutBackState(state, input.what);
        log.line(`==> ${summary[0].toUpperCase()}${summary.slice(1)}`);
        return { ...state, summary };
      });
    },

    async resetDatabase(input: { taskId: string; environmentId: string }) {
      return withLog(deps, input.taskId, async (log) => {
        const login = await serviceLogin(deps, input.environmentId);
        if (!login) throw fail('the environment has no database service');
        log.line(`==> Emptying database ${login.database}`);
        await recreateServiceDatabase(config, login);
        await restartWeb(input.environmentId, log);
        return { database: login.database };
      });
    },

    ...createDrillActivities(deps),
    volumesToAsk: (input: { projectId: string }) => volumesToAsk(deps, input.projectId),
    startScheduledBackups: (input: { projectId: string; answered?: Record<string, boolean> }) =>
      startScheduledBackups(deps, input.projectId, input.answered),
    pruneSnapshots: (input: { projectId: string }) => pruneSnapshots(deps, input.projectId),
  };
}

export type DataActivities = ReturnType<typeof createDataActivities>;
