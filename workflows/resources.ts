// pruneResourceSamples: started every day by the schedule `resource-samples-prune` (and by hand with
// `temporal schedule trigger`): deletes resource samples older than 90 days.

import { proxyActivities } from '@temporalio/workflow';
import type { ResourceActivities } from '../activities/machines/prune';

const { deleteOldResourceSamples } = proxyActivities<ResourceActivities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '2 minutes',
  retry: { initialInterval: '10 seconds', maximumInterval: '10 minutes', maximumAttempts: 10 },
});

export async function pruneResourceSamples(): Promise<{ deleted: number }> {
  return { deleted: await deleteOldResourceSamples() };
}
