/**
 * The data area's task workflows (db/vocabulary.ts names them): createService, backupEnvironment,
 * restoreBackup, syncEnvironment, resetDatabase; and scheduledBackups, the run of a project's backup-window
 * schedule (not a task itself: it starts a backup task per environment with data, then prunes).
 * Long activities heartbeat: a worker killed mid-way is noticed within the heartbeat timeout and the activity
 * runs again from the start on another worker (a put-back swaps data in only once complete, so a rerun is safe).
 * A restore or sync that still fails (its last attempt's worker killed too) is settled: staging copies removed,
 * a swap cut half way rolled back, and the task's error says whether the data is the new or the previous one.
 */
import { ActivityFailure, TimeoutFailure, patched, proxyActivities } from '@temporalio/workflow';
import type { DataActivities } from '../activities/data';
import type { MoveVolumeActivities } from '../activities/machines/move-volume';
import { runTask, failure, describeError, type TaskWorkflowInput } from './task-runner';
import { profiles } from './profiles';
import { hostWaitSeconds, onEnvironmentHost, onHost } from './host-queue';
import { afterSwap, restorePointInTimeStep } from './pitr';

const quick = proxyActivities<DataActivities>(profiles.quick);

/** Why a long step failed; a heartbeat timeout means its worker stopped answering (killed, or its host gone). */
function reasonOf(err: unknown): string {
  let e: unknown = err;
  while (e instanceof ActivityFailure && e.cause) e = e.cause;
  if (e instanceof TimeoutFailure && e.timeoutType === 'HEARTBEAT')
    return 'the worker running it stopped answering on every attempt';
  return describeError(err);
}

/** Runs the activity; its failure ends the task failed with the activity's own reason (after `what:`, if given). */
async function step<T>(fn: () => Promise<T>, what?: string): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    return failure(what ? `${what}: ${reasonOf(err)}` : reasonOf(err));
  }
}

/** The patch that settled a failed put-back on the environment's host: one failed before it replays as it ran. */
const SETTLE_ON_HOST_PATCH = 'settle-on-host';

/**
 * Runs a put-back (restore, sync); when it fails, settles the environment's data and ends the task failed
 * with the reason and what the data now is.
 */
async function putBackStep<T>(input: TaskWorkflowInput, what: 'restore' | 'sync', fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const reason = reasonOf(err);
    const envId = input.task.environment_id!;
    // the staging copies and the swap are in the environment's volume, on its host's disk
    const settle = patched(SETTLE_ON_HOST_PATCH)
      ? proxyActivities<DataActivities>(await onEnvironmentHost(envId, profiles.quick))
      : quick;
    const settled = await settle.settlePutBack({ taskId: input.task.id, environmentId: envId, what }).then(
      (state) => state.summary,
      (e) =>
        `what the environment's data is now could not be checked (${reasonOf(e)}); run the ${what} again once that is fixed`,
    );
    return failure(`${reason}; ${settled}`);
  }
}

export async function createService(input: TaskWorkflowInput<'service_create'>) {
  return runTask(input, async ({ params, start }) => {
    await start();
    const serviceId = params.service_id;
    try {
      // the web process restarts on the environment's host with the service's variables (host-queue.ts)
      const onHost = proxyActivities<DataActivities>(
        await onEnvironmentHost(input.task.environment_id!, profiles.quick),
      );
      const created = await onHost.createServiceDatabase({ taskId: input.task.id, serviceId });
      await afterSwap(input.task.id);
      return created;
    } catch (err) {
      await quick.markServiceFailed({ serviceId });
      return failure(describeError(err));
    }
  });
}

export async function backupEnvironment(input: TaskWorkflowInput<'backup'>) {
  return runTask(input, async ({ params, start }) => {
    await start();
    const backupId = params.backup_id;
    try {
      // the volume is on the environment's host: the snapshot is taken there (host-queue.ts)
      const onHost = proxyActivities<DataActivities>(
        await onEnvironmentHost(input.task.environment_id!, profiles.long),
      );
      return await onHost.takeBackup({
        taskId: input.task.id,
        backupId,
        environmentId: input.task.environment_id!,
        destinationId: params.destination_id,
        trigger: params.trigger,
      });
    } catch (err) {
      // The activity gave up without saying so itself (e.g. its worker was killed on the last attempt):
      // the snapshot is never left `running`.
      const reason = reasonOf(err);
      await quick.markBackupFailed({ backupId, error: reason });
      return failure(reason);
    }
  });
}

export async function restoreBackup(input: TaskWorkflowInput<'restore'>) {
  return runTask(input, async ({ params, start }) => {
    await start();
    if ('point_in_time' in params)
      return putBackStep(input, 'restore', () => restorePointInTimeStep(input, params.point_in_time));
    const onHost = proxyActivities<DataActivities>(await onEnvironmentHost(input.task.environment_id!, profiles.long));
    const restored = await putBackStep(input, 'restore', () =>
      onHost.restoreBackup({
        taskId: input.task.id,
        backupId: params.backup_id,
        environmentId: input.task.environment_id!,
      }),
    );
    await afterSwap(input.task.id);
    return restored;
  });
}

/**
 * The patch that carried a sync's source files across hosts: a sync started before it replays reading them on the
 * target's host, as it ran.
 */
const SYNC_ACROSS_HOSTS_PATCH = 'sync-across-hosts';

export async function syncEnvironment(input: TaskWorkflowInput<'sync'>) {
  return runTask(input, async ({ params, start }) => {
    await start();
    const ids = {
      taskId: input.task.id,
      fromEnvironmentId: params.from_environment_id,
      environmentId: input.task.environment_id!,
    };
    // the target's web process restarts on its host (host-queue.ts)
    const targetHost = await onEnvironmentHost(ids.environmentId, profiles.long);
    const onHost = proxyActivities<DataActivities>(targetHost);
    // the source's volume is on its own host's disk: from another host, its files come through the release store
    const sourceHost = patched(SYNC_ACROSS_HOSTS_PATCH)
      ? await onEnvironmentHost(ids.fromEnvironmentId, profiles.long)
      : targetHost;
    const across = sourceHost.taskQueue !== targetHost.taskQueue;
    try {
      if (across)
        await step(() => proxyActivities<DataActivities>(sourceHost).copySyncFilesOut(ids), "the source's files");
      const synced = await putBackStep(input, 'sync', () => onHost.syncData({ ...ids, filesThroughStore: across }));
      await afterSwap(input.task.id);
      return synced;
    } finally {
      // a store failing now leaves the copy (encrypted) behind; the task's own outcome stands
      if (across) await quick.dropSyncCopy(ids).catch(() => undefined);
    }
  });
}

export async function resetDatabase(input: TaskWorkflowInput<'reset_database'>) {
  return runTask(input, async ({ start }) => {
    await start();
    // the web process restarts on the environment's host (host-queue.ts)
    const onHost = proxyActivities<DataActivities>(await onEnvironmentHost(input.task.environment_id!, profiles.long));
    const reset = await step(() =>
      onHost.resetDatabase({ taskId: input.task.id, environmentId: input.task.environment_id! }),
    );
    await afterSwap(input.task.id);
    return reset;
  });
}

/** The patch that asks a volume's own host whether it holds files: a run before it replays as it ran. */
const ASK_VOLUME_HOSTS_PATCH = 'scheduled-backup-asks-host';

/**
 * One run of the `backups-<project_id>` schedule. An environment on another host whose last usage sample says its
 * volume is empty is asked on its host first (the sample may predate its first files); a host that does not
 * answer within its wait leaves the sample's word.
 */
export async function scheduledBackups(input: { projectId: string }): Promise<{ started: string[]; pruned: number }> {
  let answered: Record<string, boolean> | undefined;
  if (patched(ASK_VOLUME_HOSTS_PATCH)) {
    const { ask, lostSeconds } = await quick.volumesToAsk({ projectId: input.projectId });
    const wait = hostWaitSeconds({ lostSeconds });
    const answers = await Promise.all(
      ask.map(({ environmentId, host }) =>
        proxyActivities<MoveVolumeActivities>(onHost(host, wait, profiles.quick))
          .volumeHoldsFiles({ environmentId })
          .then((held) => [environmentId, held] as const)
          .catch(() => null),
      ),
    );
    answered = Object.fromEntries(answers.filter((a) => a !== null));
  }
  const started = await quick.startScheduledBackups({ projectId: input.projectId, answered });
  const pruned = await quick.pruneSnapshots({ projectId: input.projectId });
  return { started, pruned };
}
