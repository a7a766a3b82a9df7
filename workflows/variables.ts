/**
 * applyVariables (`configuration`/`apply_variables`): the environment's web process restarts with the
 * current variables, without a build; whatever fails, the running process keeps serving.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { VariableActivities } from '../activities/variables';
import { failure, runTask, type TaskWorkflowInput } from './task-runner';
import { profiles } from './profiles';
import { onEnvironmentHost } from './host-queue';

export async function applyVariables(input: TaskWorkflowInput<'apply_variables'>) {
  return runTask(input, async ({ log, start }) => {
    await start();
    const environmentId = input.task.environment_id;
    if (!environmentId) failure('the task names no environment');
    await log('==> Restarting the web process with the current variables (no build)');
    // the web process is on the environment's host: its queue (host-queue.ts)
    const acts = proxyActivities<VariableActivities>(await onEnvironmentHost(environmentId, profiles.heartbeating));
    const r = await acts.restartWithVariables({ taskId: input.task.id, environmentId });
    return { restarted: r.restarted, variables: r.variables };
  });
}
