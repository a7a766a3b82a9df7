// pruneResourceSamples: started every day by the schedule `resource-samples-prune` (and by hand with
// `temporal schedule trigger`): deletes resource samples older than 90 days.

import { proxyActivities } from '@temporalio/workflow';
import type { ResourceActivities } from '../activities/machines/resources';
import { profiles } from './profiles';

const { deleteOldResourceSamples } = proxyActivities<ResourceActivities>(profiles.batch);

export async function pruneResourceSamples(): Promise<{ deleted: number }> {
  return { deleted: await deleteOldResourceSamples() };
}
