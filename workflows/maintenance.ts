/** setMaintenance (`maintenance`/`maintenance_on` or `maintenance_off`): switches the edge's answer for the environment. */
import { proxyActivities } from '@temporalio/workflow';
import type { EnvironmentMaintenanceActivities } from '../activities/maintenance/environment';
import { failure, runTask, type TaskWorkflowInput } from './task-runner';
import { profiles } from './profiles';

const acts = proxyActivities<EnvironmentMaintenanceActivities>(profiles.quick);

export async function setMaintenance(input: TaskWorkflowInput<'maintenance_on' | 'maintenance_off'>) {
  return runTask(input, async ({ params, start }) => {
    await start();
    const environmentId = input.task.environment_id;
    if (!environmentId) failure('the task names no environment');
    const on = input.task.type === 'maintenance_on';
    const note = ('note' in params ? params.note : undefined) ?? null;
    await acts.setEnvironmentMaintenance({ taskId: input.task.id, environmentId, on, note });
    return { maintenance: on };
  });
}
