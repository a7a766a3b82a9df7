/**
 * The renewal schedule (CONTRACT "Certificates"): every hour, `renewCertificates` starts a
 * `certificate_renew` task for each certificate within CERTIFICATE_RENEW_DAYS of its end, and a
 * `certificate_issue` task for each failed one whose day has come (and each verified domain without one).
 * Created when the worker starts and brought up to date on every start, keeping an operator's pause.
 */
import { type Client, ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import { dailyAction } from '../daily-schedule';
import { DEFAULT_TASK_QUEUE } from '../../system/config';

/** One schedule per task queue (the default queue's is plainly `certificate-renewals`). */
export const certificateRenewalScheduleId = (taskQueue: string) =>
  taskQueue === DEFAULT_TASK_QUEUE ? 'certificate-renewals' : `certificate-renewals-${taskQueue}`;

const POLICIES = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 day', pauseOnFailure: false } as const;

export async function ensureCertificateRenewalSchedule(
  client: Client,
  taskQueue: string,
  every = '1h',
): Promise<{ scheduleId: string; created: boolean }> {
  const scheduleId = certificateRenewalScheduleId(taskQueue);
  const spec = { intervals: [{ every }] };
  const action = dailyAction({ scheduleId, workflowType: 'renewCertificates', taskQueue, args: [] });
  try {
    await client.schedule.create({
      scheduleId,
      spec,
      action,
      policies: POLICIES,
      state: { note: 'Renews certificates near their end and retries failed ones once a day.' },
    });
    return { scheduleId, created: true };
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  await client.schedule.getHandle(scheduleId).update((previous) => ({
    spec,
    action,
    policies: POLICIES,
    state: {
      paused: previous.state.paused,
      note: previous.state.note,
      remainingActions: previous.state.remainingActions,
    },
    typedSearchAttributes: previous.typedSearchAttributes,
  }));
  return { scheduleId, created: false };
}
