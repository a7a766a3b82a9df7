/**
 * The WAL archive's workflows (activities/data/pitr.ts): `archiveBackups`, the run of the `pitr-full` and
 * `pitr-diff` schedules, and `afterSwap`, the incremental backup every swapping task (and a service's creation)
 * takes before it ends, so that the environment's current database is in a backup of the archive.
 */
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { PitrActivities } from '../activities/data/pitr';
import { profiles } from './profiles';
import type { TaskWorkflowInput } from './task-runner';

const acts = proxyActivities<PitrActivities>(profiles.long);
const lasting = proxyActivities<PitrActivities>(profiles.untilDone);

/** The point-in-time part of restoreBackup (workflows/data.ts): its activity, then the incremental backup. */
export async function restorePointInTimeStep(input: TaskWorkflowInput, pointInTime: string) {
  let restored: Awaited<ReturnType<PitrActivities['restorePointInTime']>>;
  try {
    restored = await acts.restorePointInTime({
      taskId: input.task.id,
      environmentId: input.task.environment_id!,
      pointInTime,
    });
  } catch (err) {
    await lasting.clearPitrScratch({ taskId: input.task.id });
    throw err;
  }
  await afterSwap(input.task.id);
  return restored;
}

/** Keeps the database a point-in-time restore replaced until `dropAt`, then drops it. */
export async function dropKeptDatabaseLater(input: { database: string; dropAt: string }): Promise<void> {
  const wait = Date.parse(input.dropAt) - Date.now();
  if (wait > 0) await sleep(wait);
  await lasting.dropKeptDatabase({ database: input.database });
}

/** One run of a `pitr-*` schedule. */
export async function archiveBackups(input: { type: 'full' | 'diff' }) {
  return acts.archiveBackup(input);
}

/** The incremental backup after a swap; its failure (logged in the task) never fails the task. */
export async function afterSwap(taskId: string): Promise<void> {
  await acts.archiveAfterSwap({ taskId }).catch(() => undefined);
}
