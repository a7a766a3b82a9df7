/**
 * The WAL archive's workflows (activities/data/pitr.ts): `archiveBackups`, the run of the `pitr-full` and
 * `pitr-diff` schedules, and `afterSwap`, the incremental backup every swapping task (and a service's creation)
 * takes before it ends, so that the environment's current database is in a backup of the archive.
 */
import { type ActivityOptions, proxyActivities, sleep } from '@temporalio/workflow';
import type { PitrActivities } from '../activities/data/pitr';
import { profiles } from './profiles';
import type { TaskWorkflowInput } from './task-runner';
import { onServicesHost } from './host-queue';

/**
 * The archive is the services server's (pgBackRest runs beside it): its activities go to that host's queue. (A
 * proxy is never returned from an async function: awaiting it would take its `then` for an activity.)
 */
const onServices = (options: ActivityOptions) => proxyActivities<PitrActivities>(options);

/** The point-in-time part of restoreBackup (workflows/data.ts): its activity, then the incremental backup. */
export async function restorePointInTimeStep(input: TaskWorkflowInput, pointInTime: string) {
  let restored: Awaited<ReturnType<PitrActivities['restorePointInTime']>>;
  const acts = onServices(await onServicesHost(profiles.long));
  try {
    restored = await acts.restorePointInTime({
      taskId: input.task.id,
      environmentId: input.task.environment_id!,
      pointInTime,
    });
  } catch (err) {
    await onServices(await onServicesHost(profiles.untilDone)).clearPitrScratch({ taskId: input.task.id });
    throw err;
  }
  await afterSwap(input.task.id);
  return restored;
}

/** Keeps the database a point-in-time restore replaced until `dropAt`, then drops it. */
export async function dropKeptDatabaseLater(input: { database: string; dropAt: string }): Promise<void> {
  const wait = Date.parse(input.dropAt) - Date.now();
  if (wait > 0) await sleep(wait);
  await onServices(await onServicesHost(profiles.untilDone)).dropKeptDatabase({ database: input.database });
}

/** One run of a `pitr-*` schedule. */
export async function archiveBackups(input: { type: 'full' | 'diff' }) {
  return onServices(await onServicesHost(profiles.long)).archiveBackup(input);
}

/** The incremental backup after a swap; its failure (logged in the task) never fails the task. */
export async function afterSwap(taskId: string): Promise<void> {
  await onServices(await onServicesHost(profiles.long))
    .archiveAfterSwap({ taskId })
    .catch(() => undefined);
}
