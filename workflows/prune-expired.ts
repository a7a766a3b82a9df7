// Pruning expired sessions, device codes, e-mail confirmations, stale sign-ups and old reminder rows,
// started every day by the schedule `prune-expired` (and by hand with `temporal schedule trigger`).

import { proxyActivities } from '@temporalio/workflow';
import type { MaintenanceActivities, PruneExpiredInput, PruneExpiredResult } from '../activities/maintenance/prune';

const { pruneExpired } = proxyActivities<MaintenanceActivities>({
  startToCloseTimeout: '30 minutes',
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '5 minutes',
    maximumAttempts: 10,
    nonRetryableErrorTypes: ['InvalidInput'],
  },
});

export async function pruneExpiredRecords(input: PruneExpiredInput = {}): Promise<PruneExpiredResult> {
  return pruneExpired({ asOf: input.asOf ?? new Date(Date.now()).toISOString() });
}
