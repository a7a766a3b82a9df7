/**
 * verifyBackup (`backups`/`verify`): a restore drill of one snapshot (activities/data/drills.ts). A drill that
 * fails, whatever the cause (also its worker killed on the last attempt), is settled: its scratch removed, the
 * snapshot's verify_error recorded, the team told (`backup.verify_failed`); the task ends failed with the reason.
 * runRestoreDrills: one run of the daily `restore-drills` schedule (a drill of every environment's newest snapshot).
 */
import { patched, proxyActivities } from '@temporalio/workflow';
import type { DataActivities } from '../activities/data';
import { describeError, failure, runTask, type TaskWorkflowInput } from './task-runner';
import { profiles } from './profiles';
import { onServicesHost } from './host-queue';
import { ActivityFailure, TimeoutFailure } from '@temporalio/workflow';

const quick = proxyActivities<DataActivities>(profiles.quick);

/** The patch that settled a failed drill on the services server's host: one failed before it replays as it ran. */
const SETTLE_DRILL_ON_HOST_PATCH = 'settle-drill-on-host';

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
      const settlement = { taskId: input.task.id, backupId, reason };
      if (!patched(SETTLE_DRILL_ON_HOST_PATCH)) await quick.settleDrill(settlement);
      else {
        // its scratch directory is on the services server's host; with that host away, the failure is still
        // recorded and told from any worker
        const onServices = proxyActivities<DataActivities>(await onServicesHost(profiles.quick));
        await onServices.settleDrill(settlement).catch(() => quick.settleDrill(settlement));
      }
      return failure(reason);
    }
  });
}

export async function runRestoreDrills(): Promise<{ started: string[] }> {
  return { started: await quick.startRestoreDrills() };
}
