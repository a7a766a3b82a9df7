/**
 * Deploy, redeploy, rollback and build: each a task started through the task client (core/tasks.ts),
 * which writes the row and starts the workflow together. Deploys, redeploys and rollbacks are exclusive:
 * the environment's one change at a time.
 */
import type { Deps } from '../system/deps';
import { errors } from './errors';
import { assertNoExclusiveTask, startTask, type TaskRequester } from './tasks';
import type { Environment } from '../db/models/environment';
import { liveRelease, rollbackTarget } from '../db/queries/releases';
import type { DeployType } from '../db/vocabulary';
import { deploySummary, type DeployWorkflowInput } from '../workflows/deploys-shared';

export type EnvironmentWithProject = Environment & { project_name: string; repository_url: string | null };

/** The environment with its project's name and repository: one query (the deploy routes' scope). */
export async function environmentWithProject(
  knex: Deps['knex'],
  id: string,
): Promise<EnvironmentWithProject | undefined> {
  return knex('environments')
    .join('projects', 'projects.id', 'environments.project_id')
    .where('environments.id', id)
    .first('environments.*', 'projects.name as project_name', 'projects.repository_url');
}

export async function requestTask(
  deps: Deps,
  actor: TaskRequester,
  env: EnvironmentWithProject,
  input: { type: DeployType | 'build'; skipSteps?: boolean },
) {
  const { knex } = deps;
  const project = { id: env.project_id, name: env.project_name };
  if (!env.repository_url) {
    throw errors.conflict('no_repository');
  }
  if (env.stopped_at) {
    throw errors.conflict('conflict', 'The environment is stopped: its project was cancelled');
  }
  if (input.type === 'redeploy' || input.type === 'rollback') {
    // Answered before what a redeploy or rollback would need: a change runs, so none of them may start
    // now. (A deploy needs no such look-up: the workflow id's FAIL conflict policy answers for it.)
    await assertNoExclusiveTask(deps, env.id);
  }
  if (input.type === 'redeploy' && !(await liveRelease(knex, env.id))) {
    throw errors.conflict('nothing_to_redeploy');
  }
  if (input.type === 'rollback' && !(await rollbackTarget(knex, env.id))) {
    throw errors.conflict('nothing_to_roll_back');
  }
  const isBuild = input.type === 'build';
  const skipSteps = input.type === 'rollback' ? true : (input.skipSteps ?? false);
  const workflowInput: Omit<DeployWorkflowInput, 'task'> = {
    environment: { id: env.id, name: env.name, git_ref: env.git_ref },
    project,
    skipSteps,
    stepTimeoutSeconds: deps.config.stepTimeoutSeconds,
  };
  return startTask(deps, actor, {
    type: input.type,
    teamId: env.team_id,
    projectId: env.project_id,
    environmentId: env.id,
    params: {
      ...(input.type === 'deploy' || isBuild ? { git_ref: env.git_ref } : {}),
      ...(input.type === 'deploy' || input.type === 'redeploy' ? { skip_steps: skipSteps } : {}),
    },
    input: workflowInput,
    summary: deploySummary(input.type, env, project),
  });
}
