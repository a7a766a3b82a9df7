/**
 * retireEnvironment: a deleted environment's processes, network and files are taken off the host (started by
 * DELETE /environments/{id}, workflow id workflowIds.environmentRetire). Retried until it is done: until then
 * the environment's port is not given to a new environment.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { RetireInput, createEnvironmentActivities } from '../activities/environments';
import { profiles } from './profiles';

const { retireEnvironmentHost } = proxyActivities<ReturnType<typeof createEnvironmentActivities>>(profiles.untilDone);

export async function retireEnvironment(input: RetireInput): Promise<void> {
  await retireEnvironmentHost(input);
}
