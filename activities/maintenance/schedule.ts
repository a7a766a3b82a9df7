// The Temporal schedule `prune-expired`: once a day, at PRUNE_HOUR_UTC. Created when the worker
// starts and brought up to the current settings on every start; an operator's pause is kept.

import {
  Client,
  ScheduleAlreadyRunning,
  ScheduleOverlapPolicy,
  type ScheduleOptionsStartWorkflowAction,
  type Workflow,
} from '@temporalio/client';
import { SearchAttributeType, defineSearchAttributeKey } from '@temporalio/common';
import { SCHEDULE_PRUNE_EXPIRED } from '../../workflows/prune-expired';

export const PRUNE_WORKFLOW_TYPE = 'pruneExpiredRecords';

const TaskKind = defineSearchAttributeKey('TaskKind', SearchAttributeType.KEYWORD);
const TaskType = defineSearchAttributeKey('TaskType', SearchAttributeType.KEYWORD);

export interface PruneScheduleSettings {
  taskQueue: string;
  /** Hour of the day (UTC, 0-23). */
  hourUtc: number;
  namespace?: string;
}

const POLICIES = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 day', pauseOnFailure: false } as const;

function action(taskQueue: string): ScheduleOptionsStartWorkflowAction<Workflow> {
  return {
    type: 'startWorkflow',
    workflowType: PRUNE_WORKFLOW_TYPE,
    workflowId: SCHEDULE_PRUNE_EXPIRED, // the schedule appends each run's time
    taskQueue,
    args: [{}],
    typedSearchAttributes: [
      { key: TaskKind, value: 'maintenance' },
      { key: TaskType, value: SCHEDULE_PRUNE_EXPIRED },
    ],
  };
}

export async function ensurePruneSchedule(
  client: Client,
  settings: PruneScheduleSettings,
): Promise<{ scheduleId: string; created: boolean }> {
  if (!Number.isInteger(settings.hourUtc) || settings.hourUtc < 0 || settings.hourUtc > 23) {
    throw new Error(`PRUNE_HOUR_UTC must be a whole hour from 0 to 23, got ${settings.hourUtc}`);
  }
  const scoped =
    settings.namespace && settings.namespace !== client.options.namespace
      ? new Client({ connection: client.connection, namespace: settings.namespace })
      : client;
  const spec = {
    calendars: [
      {
        hour: settings.hourUtc,
        minute: 30,
        second: 0,
        comment: `every day at ${String(settings.hourUtc).padStart(2, '0')}:30 UTC`,
      },
    ],
    timezone: 'UTC',
  };
  const scheduleId = SCHEDULE_PRUNE_EXPIRED;
  try {
    await scoped.schedule.create({
      scheduleId,
      spec,
      action: action(settings.taskQueue),
      policies: POLICIES,
      state: {
        note: 'Deletes expired sessions, device codes, e-mail confirmations, stale sign-ups and old reminder rows.',
      },
    });
    return { scheduleId, created: true };
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  await scoped.schedule.getHandle(scheduleId).update((previous) => ({
    spec,
    action: action(settings.taskQueue),
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
