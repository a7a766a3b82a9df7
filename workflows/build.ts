/**
 * buildEnvironment: builds a release of the environment's git ref head without putting it live
 * (workflow id workflowIds.build(taskId)). A ready release of that commit is reused. The task waits
 * `pending` until a build slot of the whole system takes it, in request order (build-gate.ts).
 */
import { buildHead } from './deploy';
import { runTask, taskActs } from './task-runner';
import type { DeployOutcome, DeployWorkflowInput } from './deploys-shared';

export async function buildEnvironment(input: DeployWorkflowInput<'build'>): Promise<DeployOutcome> {
  return runTask(input, async (ctx) => {
    const { releaseId, sha, gitRef } = await buildHead(input, ctx.params.git_ref, ctx);
    await taskActs.recordPhases({ taskId: input.task.id, phases: ['release_ready'] });
    return { release_id: releaseId, commit_sha: sha, git_ref: gitRef };
  });
}
