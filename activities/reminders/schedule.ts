// The Temporal schedule that runs the token-expiry reminders every day (CONTRACT: id
// `token-expiry-reminders`, at least daily): one of the system's daily schedules (activities/daily-schedule.ts).
// A run still going (e.g. retrying through a mail outage) makes the next one skip; a missed run is taken
// within a day (the next run sends whatever is due then, so nothing is lost but a day).

import type { Client, ScheduleOptionsStartWorkflowAction, ScheduleSpec, Workflow } from '@temporalio/client';
import { SCHEDULE_TOKEN_EXPIRY_REMINDERS } from '../../workflows/shared';
import { checkHour, dailyAction, dailySpec, ensureDailySchedule } from '../daily-schedule';

export const REMINDER_WORKFLOW_TYPE = 'sendTokenExpiryReminders';

export interface ReminderScheduleSettings {
  /** The worker's task queue: the schedule's runs start there. */
  taskQueue: string;
  /** Hour of the day (UTC, 0-23) the reminders go out. */
  hourUtc: number;
  /** Namespace of the schedule; the client's own when omitted. */
  namespace?: string;
}

export interface EnsuredSchedule {
  scheduleId: string;
  created: boolean;
}

export const reminderScheduleSpec = (hourUtc: number): ScheduleSpec => dailySpec(hourUtc);

export const reminderScheduleAction = (taskQueue: string): ScheduleOptionsStartWorkflowAction<Workflow> =>
  dailyAction({ scheduleId: SCHEDULE_TOKEN_EXPIRY_REMINDERS, workflowType: REMINDER_WORKFLOW_TYPE, taskQueue });

/** Creates the schedule, or brings it up to the current settings; an operator's pause and note are kept. */
export async function ensureReminderSchedule(
  client: Client,
  settings: ReminderScheduleSettings,
): Promise<EnsuredSchedule> {
  checkHour('REMINDER_HOUR_UTC', settings.hourUtc);
  return ensureDailySchedule(client, {
    scheduleId: SCHEDULE_TOKEN_EXPIRY_REMINDERS,
    workflowType: REMINDER_WORKFLOW_TYPE,
    taskQueue: settings.taskQueue,
    hourUtc: settings.hourUtc,
    namespace: settings.namespace,
    note: 'Token-expiry reminders: sends what is due, once each.',
  });
}
