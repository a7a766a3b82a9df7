/**
 * retireEnvironment: a deleted environment's processes, network and files are taken off the host (started by
 * DELETE /environments/{id}, workflow id workflowIds.environmentRetire). Retried until it is done: until then
 * the environment's port is not given to a new environment. It runs on the queue of the host the environment
 * was placed on (`input.host`, read before its rows went), waiting for that host when it is down; without one
 * (started by an older version), on the shared queue.
 */
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { RetireInput, createEnvironmentActivities } from '../activities/environments';
import { hostTaskQueue } from '../system/task-queues';
import { profiles } from './profiles';

type EnvironmentActivities = ReturnType<typeof createEnvironmentActivities>;

export async function retireEnvironment(input: RetireInput): Promise<void> {
  const { retireEnvironmentHost } = proxyActivities<EnvironmentActivities>({
    ...profiles.untilDone,
    ...(input.host ? { taskQueue: hostTaskQueue(workflowInfo().taskQueue, input.host) } : {}),
  });
  await retireEnvironmentHost(input);
}
