/**
 * verifyBackup (`backups`/`verify`): a restore drill of one snapshot (activities/data/drills.ts). A drill that
 * fails, whatever the cause (also its worker killed on the last attempt), is settled: its scratch removed, the
 * snapshot's verify_error recorded, the team told (`backup.verify_failed`); the task ends failed with the reason.
 * runRestoreDrills: one run of the daily `restore-drills` schedule (a drill of every environment's newest snapshot).
 */
import { proxyActivities } from '@temporalio/workflow';
import type { DataActivities } from '../activities/data';
import { describeError, failure, runTask, type TaskWorkflowInput } from './task-runner';
import { profiles } from './profiles';
import { onServicesHost } from './host-queue';
import { ActivityFailure, TimeoutFailure } from '@temporalio/workflow';

const quick = proxyActivities<DataActivities>(profiles.quick);

function reasonOf(err: unknown): string {
  let e: unknown = err;
  while (e instanceof ActivityFailure && e.cause) e = e.cause;
  if (e instanceof TimeoutFailure && e.timeoutType === 'HEARTBEAT')
    return 'the restore drill failed: the worker running it stopped answering on every attempt';
  return describeError(err);
}

export async function verifyBackup(input: TaskWorkflowInput<'verify'>) {
  return runTask(input, async ({ params, start }) => {
    await start();
    const backupId = params.backup_id;
    try {
      // a drill restores beside the services server (its scratch server and the archive's restores)
      const acts = proxyActivities<DataActivities>(await onServicesHost(profiles.long));
      return await acts.verifySnapshot({ taskId: input.task.id, backupId });
    } catch (err) {
      const reason = reasonOf(err);
      await quick.settleDrill({ taskId: input.task.id, backupId, reason });
      return failure(reason);
    }
  });
}

export async function runRestoreDrills(): Promise<{ started: string[] }> {
  return { started: await quick.startRestoreDrills() };
}
