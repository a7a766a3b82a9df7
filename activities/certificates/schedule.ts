/**
 * The renewal schedule (CONTRACT "Certificates"): every hour, `renewCertificates` starts a
 * `certificate_renew` task for each certificate within CERTIFICATE_RENEW_DAYS of its end, and a
 * `certificate_issue` task for each failed one whose day has come (and each verified domain without one).
 * Created when the worker starts and brought up to date on every start, keeping an operator's pause.
 */
import type { Client } from '@temporalio/client';
import { dailyAction, ensureSchedule } from '../daily-schedule';
import { DEFAULT_TASK_QUEUE } from '../../system/config';

/** One schedule per task queue (the default queue's is plainly `certificate-renewals`). */
export const certificateRenewalScheduleId = (taskQueue: string) =>
  taskQueue === DEFAULT_TASK_QUEUE ? 'certificate-renewals' : `certificate-renewals-${taskQueue}`;

export async function ensureCertificateRenewalSchedule(
  client: Client,
  taskQueue: string,
  every = '1h',
): Promise<{ scheduleId: string; created: boolean }> {
  const scheduleId = certificateRenewalScheduleId(taskQueue);
  return ensureSchedule(client, {
    scheduleId,
    spec: { intervals: [{ every }] },
    action: dailyAction({ scheduleId, workflowType: 'renewCertificates', taskQueue, args: [] }),
    note: 'Renews certificates near their end and retries failed ones once a day.',
  });
}
