/**
 * `apply`: restarts web processes with the current variables, without a build, as a
 * `configuration`/`apply_variables` task (workflow applyVariables). A project's apply is one task for each
 * of its environments with a live release.
 */
import type { Deps } from '../../system/deps';
import type { Actor } from '../../core/actor';
import { startTask } from '../../core/tasks';
import type { Task } from '../../db/models/task';
import { liveProjectEnvironments } from '../../db/queries/environments';

export function applyToEnvironment(
  deps: Deps,
  actor: Actor,
  env: { id: string; team_id: string; project_id: string; name: string },
): Promise<Task> {
  return startTask(deps, actor, {
    type: 'apply_variables',
    teamId: env.team_id,
    projectId: env.project_id,
    environmentId: env.id,
    params: {},
    summary: `apply variables to ${env.name}`,
  });
}

export async function applyToProject(deps: Deps, actor: Actor, projectId: string): Promise<Task[]> {
  const envs = await liveProjectEnvironments(deps.knex, projectId);
  const tasks: Task[] = [];
  for (const env of envs) tasks.push(await applyToEnvironment(deps, actor, env));
  return tasks;
}
