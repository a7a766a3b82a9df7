/** clearCdn (`configuration`/`cdn_clear`): the edges drop what they cached under the prefixes (or all). */
import { proxyActivities } from '@temporalio/workflow';
import type { CdnActivities } from '../activities/cdn';
import { failure, runTask, type TaskWorkflowInput } from './task-runner';
import { profiles } from './profiles';

const acts = proxyActivities<CdnActivities>(profiles.heartbeating);

export async function clearCdn(input: TaskWorkflowInput<'cdn_clear'>) {
  return runTask(input, async ({ params, start }) => {
    await start();
    const environmentId = input.task.environment_id;
    if (!environmentId) failure('the task names no environment');
    const prefixes = params.paths;
    const recorded = await acts.recordCdnPurge({ taskId: input.task.id, environmentId, prefixes });
    const applied = await acts.awaitCdnPurge({ taskId: input.task.id, purgeId: recorded.purgeId });
    return { paths: prefixes, edges: applied.edges };
  });
}
