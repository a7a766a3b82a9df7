// The Temporal schedule that runs the token-expiry reminders every day (CONTRACT: id
// `token-expiry-reminders`, at least daily). Created when the worker starts; kept in line with the
// current settings on every start, without touching an operator's pause.

import {
  Client,
  ScheduleAlreadyRunning,
  ScheduleOverlapPolicy,
  type ScheduleOptionsStartWorkflowAction,
  type ScheduleSpec,
  type Workflow,
} from '@temporalio/client';
import { SearchAttributeType, defineSearchAttributeKey } from '@temporalio/common';
import { SCHEDULE_TOKEN_EXPIRY_REMINDERS, workflowIds } from '../../workflows/shared';

export const REMINDER_WORKFLOW_TYPE = 'sendTokenExpiryReminders';

const TaskKind = defineSearchAttributeKey('TaskKind', SearchAttributeType.KEYWORD);
const TaskType = defineSearchAttributeKey('TaskType', SearchAttributeType.KEYWORD);

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

export function reminderScheduleSpec(hourUtc: number): ScheduleSpec {
  return {
    calendars: [
      { hour: hourUtc, minute: 0, second: 0, comment: `every day at ${String(hourUtc).padStart(2, '0')}:00 UTC` },
    ],
    timezone: 'UTC',
  };
}

export function reminderScheduleAction(taskQueue: string): ScheduleOptionsStartWorkflowAction<Workflow> {
  return {
    type: 'startWorkflow',
    workflowType: REMINDER_WORKFLOW_TYPE,
    // The schedule appends each run's time: token-expiry-reminders-2025-01-31T09:00:00Z.
    workflowId: workflowIds.tokenExpiryReminders,
    taskQueue,
    args: [{}],
    typedSearchAttributes: [
      { key: TaskKind, value: 'maintenance' },
      { key: TaskType, value: 'token-expiry-reminders' },
    ],
  };
}

const POLICIES = {
  // A run still going (e.g. retrying through a mail outage) makes the next one wait a day, not pile up.
  overlap: ScheduleOverlapPolicy.SKIP,
  // After the cluster was down, a missed run is still taken within a day; older ones are dropped
  // (the next run sends whatever is due then, so nothing is lost but a day).
  catchupWindow: '1 day',
  pauseOnFailure: false,
} as const;

/**
 * Creates the schedule, or brings an existing one up to the current settings (spec, action,
 * policies); its paused state and note are left as an operator set them. Safe to call on every start.
 */
export async function ensureReminderSchedule(
  client: Client,
  settings: ReminderScheduleSettings,
): Promise<EnsuredSchedule> {
  if (!Number.isInteger(settings.hourUtc) || settings.hourUtc < 0 || settings.hourUtc > 23) {
    throw new Error(`REMINDER_HOUR_UTC must be a whole hour from 0 to 23, got ${settings.hourUtc}`);
  }
  const scoped =
    settings.namespace && settings.namespace !== client.options.namespace
      ? new Client({ connection: client.connection, namespace: settings.namespace })
      : client;
  const spec = reminderScheduleSpec(settings.hourUtc);
  const action = reminderScheduleAction(settings.taskQueue);
  const scheduleId = SCHEDULE_TOKEN_EXPIRY_REMINDERS;
  try {
    await scoped.schedule.create({
      scheduleId,
      spec,
      action,
      policies: POLICIES,
      state: { note: 'Token-expiry reminders: sends what is due, once each.' },
    });
    return { scheduleId, created: true };
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  await scoped.schedule.getHandle(scheduleId).update((previous) => ({
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
