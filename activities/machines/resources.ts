/**
 * The daily prune of resource samples older than 90 days (CONTRACT "Resources"): the Temporal schedule
 * `resource-samples-prune` starts the workflow `pruneResourceSamples`, whose one activity deletes in batches.
 * The schedule is core/schedules.ts's.
 */
import { Context } from '@temporalio/activity';
import type { Deps } from '../../system/deps';
import { deleteOldSamples } from '../../db/queries/resources';

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
