/**
 * The Temporal schedule `backups-<project_id>` of a project's backup window: every day at the window's hour
 * (UTC) it runs `scheduledBackups` (workflows/backups.ts), which takes a backup of every environment of the
 * project that has data and deletes its snapshots older than the retention. Created or updated when the
 * window is set, deleted when the window returns to the default (no destination: no scheduled backups).
 */
import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy } from '@temporalio/client';
import type { Deps } from '../../system/deps';

export const backupScheduleId = (projectId: string) => `backups-${projectId}`;

export async function syncBackupSchedule(deps: Deps, projectId: string, hourUtc: number): Promise<void> {
  const scheduleId = backupScheduleId(projectId);
  const spec = { calendars: [{ hour: hourUtc, minute: 0, second: 0 }], timezone: 'UTC' };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: 'scheduledBackups',
    workflowId: `scheduled-backups-${projectId}`,
    taskQueue: deps.config.taskQueue,
    args: [{ projectId }],
  };
  const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 hour' };
  try {
    await deps.temporal.schedule.create({
      scheduleId,
      spec,
      action,
      policies,
      state: { note: `Daily backups of project ${projectId}` },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await deps.temporal.schedule.getHandle(scheduleId).update((previous) => ({ ...previous, spec, action, policies }));
  }
}

export async function deleteBackupSchedule(deps: Deps, projectId: string): Promise<void> {
  try {
    await deps.temporal.schedule.getHandle(backupScheduleId(projectId)).delete();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
}
