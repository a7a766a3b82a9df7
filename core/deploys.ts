/**
 * Deploy, redeploy, rollback and build: each a task started through the task client (core/tasks.ts),
 * which writes the row and starts the workflow together. Deploys, redeploys and rollbacks are exclusive:
 * the environment's one change at a time.
 */
import type { Deps } from '../system/deps';
import { errors } from './errors';
import { assertNoExclusiveTask, startTask, type TaskRequester } from './tasks';
import type { EnvironmentWithProject } from '../db/queries/environments';
import { liveRelease, rollbackTarget } from '../db/queries/releases';
import type { DeployType } from '../db/vocabulary';
import type { TaskParamsInput } from '../db/task-params';
import type { DeployWorkflowInput } from '../workflows/deploys-shared';

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
    params: deployParams(input.type, env.git_ref, skipSteps),
    input: workflowInput,
    summary: deploySummary(input.type, env, project),
  });
}

/** The params of a deploy, redeploy, rollback or build task. */
function deployParams(type: DeployType | 'build', gitRef: string, skipSteps: boolean): TaskParamsInput<typeof type> {
  switch (type) {
    case 'deploy':
      return { git_ref: gitRef, skip_steps: skipSteps };
    case 'redeploy':
      return { skip_steps: skipSteps };
    case 'rollback':
      return {};
    case 'build':
      return { git_ref: gitRef };
  }
}

/** A readable one-line summary shown by the Temporal Web UI. */
function deploySummary(
  type: DeployType | 'build',
  env: { name: string; git_ref: string },
  project: { name: string },
): string {
  const where = `${env.name} (${project.name})`;
  switch (type) {
    case 'deploy':
      return `deploy ${env.git_ref} to ${where}`;
    case 'redeploy':
      return `redeploy the live release of ${where}`;
    case 'rollback':
      return `roll back ${where} to the release before the last deployment`;
    case 'build':
      return `build ${env.git_ref} for ${where}`;
  }
}
