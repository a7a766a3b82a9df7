// The Temporal schedule `prune-expired`: once a day, at PRUNE_HOUR_UTC:30: one of the system's daily
// schedules (activities/daily-schedule.ts).

import type { Client } from '@temporalio/client';
import { SCHEDULE_PRUNE_EXPIRED } from '../../workflows/prune-expired';
import { checkHour, ensureDailySchedule } from '../daily-schedule';

export const PRUNE_WORKFLOW_TYPE = 'pruneExpiredRecords';

export interface PruneScheduleSettings {
  taskQueue: string;
  /** Hour of the day (UTC, 0-23). */
  hourUtc: number;
  namespace?: string;
}

export async function ensurePruneSchedule(
  client: Client,
  settings: PruneScheduleSettings,
): Promise<{ scheduleId: string; created: boolean }> {
  checkHour('PRUNE_HOUR_UTC', settings.hourUtc);
  return ensureDailySchedule(client, {
    scheduleId: SCHEDULE_PRUNE_EXPIRED,
    workflowType: PRUNE_WORKFLOW_TYPE,
    taskQueue: settings.taskQueue,
    hourUtc: settings.hourUtc,
    minute: 30,
    namespace: settings.namespace,
    note: 'Deletes expired sessions, device codes, e-mail confirmations, stale sign-ups and old reminder rows.',
  });
}
