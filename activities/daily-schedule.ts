/**
 * The system's daily Temporal schedules (token-expiry reminders, pruning of expired records and of old
 * resource samples) share one rule: created when the worker starts, brought up to the current settings
 * (spec, action, policies) on every start, with an operator's pause and note kept. A run still going makes
 * the next one skip; after an outage, a missed run is taken within a day.
 */
import {
  Client,
  ScheduleAlreadyRunning,
  ScheduleOverlapPolicy,
  type ScheduleOptionsStartWorkflowAction,
  type ScheduleSpec,
  type Workflow,
} from '@temporalio/client';
import { SearchAttributeType, defineSearchAttributeKey } from '@temporalio/common';

const TaskKind = defineSearchAttributeKey('TaskKind', SearchAttributeType.KEYWORD);
const TaskType = defineSearchAttributeKey('TaskType', SearchAttributeType.KEYWORD);

const POLICIES = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 day', pauseOnFailure: false } as const;

export interface DailySchedule {
  scheduleId: string;
  /** The workflow each run starts; its runs are named `<scheduleId>-<time>` and carry TaskType = scheduleId. */
  workflowType: string;
  taskQueue: string;
  /** The time of day (UTC). */
  hourUtc: number;
  minute?: number;
  args?: unknown[];
  /** What it does, shown in the Web UI (set at creation; an operator's note is kept after). */
  note: string;
  /** Namespace of the schedule; the client's own when omitted. */
  namespace?: string;
}

export function dailySpec(hourUtc: number, minute = 0): ScheduleSpec {
  const at = `${String(hourUtc).padStart(2, '0')}:${String(minute).padStart(2, '0')}`;
  return { calendars: [{ hour: hourUtc, minute, second: 0, comment: `every day at ${at} UTC` }], timezone: 'UTC' };
}

export function dailyAction(
  s: Pick<DailySchedule, 'scheduleId' | 'workflowType' | 'taskQueue' | 'args'>,
): ScheduleOptionsStartWorkflowAction<Workflow> {
  return {
    type: 'startWorkflow',
    workflowType: s.workflowType,
    workflowId: s.scheduleId, // the schedule appends each run's time
    taskQueue: s.taskQueue,
    args: s.args ?? [{}],
    typedSearchAttributes: [
      { key: TaskKind, value: 'maintenance' },
      { key: TaskType, value: s.scheduleId },
    ],
  };
}

/** Creates the schedule, or brings it up to the current settings keeping its paused state and note. */
export async function ensureDailySchedule(
  client: Client,
  s: DailySchedule,
): Promise<{ scheduleId: string; created: boolean }> {
  const scoped =
    s.namespace && s.namespace !== client.options.namespace
      ? new Client({ connection: client.connection, namespace: s.namespace })
      : client;
  return ensureSchedule(scoped, {
    scheduleId: s.scheduleId,
    spec: dailySpec(s.hourUtc, s.minute),
    action: dailyAction(s),
    note: s.note,
  });
}

/**
 * Creates a system schedule (skip on overlap, a day's catch-up), or, when it exists, brings its spec, action and
 * policies up to date keeping an operator's pause and note.
 */
export async function ensureSchedule(
  client: Client,
  s: { scheduleId: string; spec: ScheduleSpec; action: ScheduleOptionsStartWorkflowAction<Workflow>; note: string },
): Promise<{ scheduleId: string; created: boolean }> {
  const { scheduleId, spec, action } = s;
  try {
    await client.schedule.create({ scheduleId, spec, action, policies: POLICIES, state: { note: s.note } });
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

/** A whole hour of the day, else an error naming the setting. */
export function checkHour(name: string, hourUtc: number): void {
  if (!Number.isInteger(hourUtc) || hourUtc < 0 || hourUtc > 23)
    throw new Error(`${name} must be a whole hour from 0 to 23, got ${hourUtc}`);
}
