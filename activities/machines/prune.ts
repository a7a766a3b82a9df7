/**
 * The daily prune of resource samples older than 90 days (CONTRACT "Resources"): the Temporal schedule
 * `resource-samples-prune` starts the workflow `pruneResourceSamples`, whose one activity deletes in batches.
 * Created when the worker starts and brought up to date on every start, keeping an operator's pause.
 */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ensureDailySchedule } from '../daily-schedule';
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

/** Creates the daily schedule (04:00 UTC), or brings an existing one up to date; its paused state is kept. */
export async function ensureResourcePruneSchedule(client: Client, taskQueue: string): Promise<{ created: boolean }> {
  const { created } = await ensureDailySchedule(client, {
    scheduleId: SCHEDULE_RESOURCE_SAMPLES_PRUNE,
    workflowType: 'pruneResourceSamples',
    taskQueue,
    hourUtc: 4,
    args: [],
    note: 'Deletes resource samples older than 90 days.',
  });
  return { created };
}
