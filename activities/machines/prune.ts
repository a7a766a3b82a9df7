/**
 * The daily prune of resource samples older than 90 days (CONTRACT "Resources"): the Temporal schedule
 * `resource-samples-prune` starts the workflow `pruneResourceSamples`, whose one activity deletes in batches.
 * Created when the worker starts and brought up to date on every start, keeping an operator's pause.
 */
import { Context } from '@temporalio/activity';
import { type Client, ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import { SearchAttributeType, defineSearchAttributeKey } from '@temporalio/common';
import type { Deps } from '../../system/deps';
import { deleteOldSamples } from '../../db/queries/resources';
import { SCHEDULE_RESOURCE_SAMPLES_PRUNE } from '../../workflows/shared';

const BATCH = 50_000;

export function createResourceActivities(deps: Deps) {
  return {
    /** Deletes every sample past the retention; returns how many. */
    async deleteOldResourceSamples(): Promise<number> {
      let total = 0;
      for (;;) {
        const n = await deleteOldSamples(deps.knex, BATCH);
        total += n;
        Context.current().heartbeat(total);
        if (n < BATCH) return total;
      }
    },
  };
}
export type ResourceActivities = ReturnType<typeof createResourceActivities>;

const TaskKind = defineSearchAttributeKey('TaskKind', SearchAttributeType.KEYWORD);
const TaskType = defineSearchAttributeKey('TaskType', SearchAttributeType.KEYWORD);

/** Creates the daily schedule (04:00 UTC), or brings an existing one up to date; its paused state is kept. */
export async function ensureResourcePruneSchedule(client: Client, taskQueue: string): Promise<{ created: boolean }> {
  const scheduleId = SCHEDULE_RESOURCE_SAMPLES_PRUNE;
  const spec = { calendars: [{ hour: 4, minute: 0, second: 0, comment: 'every day at 04:00 UTC' }], timezone: 'UTC' };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: 'pruneResourceSamples',
    workflowId: scheduleId,
    taskQueue,
    args: [],
    typedSearchAttributes: [
      { key: TaskKind, value: 'maintenance' },
      { key: TaskType, value: scheduleId },
    ],
  };
  const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 day', pauseOnFailure: false };
  try {
    await client.schedule.create({
      scheduleId,
      spec,
      action,
      policies,
      state: { note: 'Deletes resource samples older than 90 days.' },
    });
    return { created: true };
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  await client.schedule.getHandle(scheduleId).update((previous) => ({
    spec,
    action,
    policies,
    state: {
      paused: previous.state.paused,
      note: previous.state.note,
      remainingActions: previous.state.remainingActions,
    },
    typedSearchAttributes: previous.typedSearchAttributes,
  }));
  return { created: false };
}
