// Pruning expired sessions, device codes, e-mail confirmations, stale sign-ups and old reminder rows,
// started every day by the schedule `prune-expired` (and by hand with `temporal schedule trigger`).

import { proxyActivities } from '@temporalio/workflow';
import type { MaintenanceActivities, PruneExpiredInput, PruneExpiredResult } from '../activities/maintenance';
import { profiles } from './profiles';

const { pruneExpired } = proxyActivities<MaintenanceActivities>(profiles.daily);

export async function pruneExpiredRecords(input: PruneExpiredInput = {}): Promise<PruneExpiredResult> {
  return pruneExpired({ asOf: input.asOf ?? new Date(Date.now()).toISOString() });
}
