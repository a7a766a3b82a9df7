/**
 * Deploy, redeploy, rollback and build: each creates a task and starts its workflow so that neither
 * exists without the other. The workflow gets the whole task record in its input (deploys: the
 * environment's one deploy workflow id, conflict policy FAIL) and its first activity upserts the row; the
 * API's own insert is committed only after the start succeeded. A refused start leaves nothing; a crash
 * after the start leaves the workflow to insert the row.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, WorkflowIdConflictPolicy } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { Deps } from '../../system/deps';
import type { Actor } from '../lib/actor';
import { authorize } from '../lib/policy';
import { errors } from '../lib/errors';
import { Environment } from '../../db/models/environment';
import { Task } from '../../db/models/task';
import { presentTask } from '../tasks/presenter';
import { insertTask } from '../../activities/tasks/transitions';
import { liveRelease, rollbackTarget, runningDeployTask } from '../../activities/deploys/queries';
import { workflowIds } from '../../workflows/shared';
import { taskSummary, type DeployWorkflowInput, type TaskRecord, type TaskType } from '../../workflows/deploys-shared';
import type { deployEnvironment } from '../../workflows/deploy';
import type { buildEnvironment } from '../../workflows/build';

/**
 * Test hook, nothing else reads it: VC_FAULT_INJECT=kill-after-workflow-start makes this API process SIGKILL
 * itself right after a task's workflow start returns, before the task row is committed (the crash that the
 * workflow's first activity covers; test/workflows/api-crash.test.ts). Read once, at startup.
 */
const KILL_AFTER_WORKFLOW_START = process.env.VC_FAULT_INJECT === 'kill-after-workflow-start';

const kw = (name: string) => defineSearchAttributeKey(name, SearchAttributeType.KEYWORD);
export const searchAttributeKeys = {
  TeamId: kw('TeamId'),
  ProjectId: kw('ProjectId'),
  EnvironmentId: kw('EnvironmentId'),
  TaskKind: kw('TaskKind'),
  TaskType: kw('TaskType'),
  TaskId: kw('TaskId'),
};

export async function requestTask(
  deps: Deps,
  actor: Actor,
  input: { environmentId: string; type: TaskType; skipSteps?: boolean },
) {
  const { knex } = deps;
  // The environment with its project's name and repository: one query.
  const env = (await knex('environments')
    .join('projects', 'projects.id', 'environments.project_id')
    .where('environments.id', input.environmentId)
    .first('environments.*', 'projects.name as project_name', 'projects.repository_url')) as
    | (Environment & { project_name: string; repository_url: string | null })
    | undefined;
  if (!env) throw errors.notFound('environment');
  await authorize(knex, actor, env.team_id, input.type === 'build' ? 'build' : 'deploy', 'environment');
  const project = { id: env.project_id, name: env.project_name };
  if (!env.repository_url) {
    throw errors.conflict('no_repository', 'The project has no repository connected: connect one with POST /projects/{id}/repository');
  }
  if (input.type === 'redeploy' || input.type === 'rollback') {
    // Answered before what a redeploy or rollback would need: a deploy runs, so none of them may start
    // now. (A deploy needs no such look-up: the workflow id's FAIL conflict policy answers for it.)
    const running = await runningDeployTask(knex, env.id);
    if (running && (await workflowOpen(deps, running.workflow_id))) throw deployInProgress(running.id);
  }
  if (input.type === 'redeploy' && !(await liveRelease(knex, env.id))) {
    throw errors.conflict('nothing_to_redeploy', 'Nothing is live on this environment yet: deploy it first');
  }
  if (input.type === 'rollback' && !(await rollbackTarget(knex, env.id))) {
    throw errors.conflict('nothing_to_roll_back', 'There is no earlier release on this environment to roll back to');
  }

  const taskId = randomUUID();
  const isBuild = input.type === 'build';
  const workflowId = isBuild ? workflowIds.build(taskId) : workflowIds.environmentDeploy(env.id);
  const skipSteps = input.type === 'rollback' ? true : (input.skipSteps ?? false);
  const task: TaskRecord = {
    id: taskId,
    team_id: env.team_id,
    project_id: env.project_id,
    environment_id: env.id,
    kind: 'deployments',
    type: input.type,
    account_user_id: actor.user.id,
    account_via: actor.via,
    workflow_id: workflowId,
    params: {
      ...(input.type === 'deploy' || isBuild ? { git_ref: env.git_ref } : {}),
      ...(input.type === 'deploy' || input.type === 'redeploy' ? { skip_steps: skipSteps } : {}),
    },
    created_at: new Date().toISOString(),
  };
  const workflowInput: DeployWorkflowInput = {
    task,
    environment: { id: env.id, name: env.name, git_ref: env.git_ref },
    project: { id: project.id, name: project.name },
    skipSteps,
    stepTimeoutSeconds: deps.config.stepTimeoutSeconds,
  };
  const k = searchAttributeKeys;
  const options = {
    taskQueue: deps.config.taskQueue,
    workflowId,
    args: [workflowInput] as [DeployWorkflowInput],
    staticSummary: taskSummary(input.type, env, project),
    typedSearchAttributes: [
      { key: k.TeamId, value: env.team_id },
      { key: k.ProjectId, value: env.project_id },
      { key: k.EnvironmentId, value: env.id },
      { key: k.TaskKind, value: 'deployments' },
      { key: k.TaskType, value: input.type },
      { key: k.TaskId, value: taskId },
    ],
  };

  const start = async (): Promise<string> => {
    const handle = isBuild
      ? await deps.temporal.workflow.start<typeof buildEnvironment>('buildEnvironment', options)
      : await deps.temporal.workflow.start<typeof deployEnvironment>('deployEnvironment', {
          ...options,
          workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
        });
    return handle.firstExecutionRunId;
  };
  const present = (row: Task) => presentTask(row, { id: actor.user.id, name: actor.user.name });

  // Usually: the row is written in a transaction that overlaps the workflow start and commits only once
  // the start has succeeded. A refused start rolls it back (neither exists); a crash before the commit
  // leaves the workflow, whose first activity inserts the same row (waiting on this transaction's row
  // lock, if any, then upserting).
  const trx = await knex.transaction();
  try {
    // run_id is left to the workflow's first activity (it records its own run); until then a cancel
    // addresses the workflow id, whose one open run (conflict policy FAIL) is this task's.
    const [row] = await Promise.all([insertTask(trx, task), start()]);
    if (KILL_AFTER_WORKFLOW_START) process.kill(process.pid, 'SIGKILL');
    await trx.commit();
    return present(row);
  } catch (err) {
    await trx.rollback().catch(() => undefined);
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }

  // The environment's deploy workflow is open. Its task may have just ended (the workflow is closing):
  // wait for that and start again, outside any transaction; else refuse, naming the running task.
  for (let attempt = 0; ; attempt++) {
    const running = await runningTaskId(deps, env.id);
    if (!(attempt < 3 && running && (await workflowClosing(deps, workflowId, running)))) throw deployInProgress(running);
    try {
      const runId = await start();
      if (KILL_AFTER_WORKFLOW_START) process.kill(process.pid, 'SIGKILL');
      return present(await insertTask(knex, { ...task, run_id: runId }));
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }
}

/** Whether the workflow is still open (a row left `running` by a terminated workflow does not block). */
async function workflowOpen(deps: Deps, workflowId: string): Promise<boolean> {
  try {
    const desc = await deps.temporal.workflow.getHandle(workflowId).describe();
    return desc.status.name === 'RUNNING';
  } catch {
    return false;
  }
}

function deployInProgress(taskId: string | null) {
  return errors.conflict('deploy_in_progress', 'Another deploy runs on this environment; wait for it to finish', { task_id: taskId });
}

/**
 * True when the task of the still-open workflow has already ended (its last activity recorded the
 * outcome; the workflow closes right after) and the workflow closed within a short wait.
 */
async function workflowClosing(deps: Deps, workflowId: string, taskId: string): Promise<boolean> {
  const row = await Task.query(deps.knex).findById(taskId);
  if (!row || !['succeeded', 'failed', 'cancelled'].includes(row.status)) return false;
  const desc = await deps.temporal.workflow.getHandle(workflowId).describe().catch(() => undefined);
  if (!desc || desc.typedSearchAttributes.get(searchAttributeKeys.TaskId) !== taskId) return true;
  const closed = deps.temporal.workflow
    .getHandle(workflowId, desc.runId)
    .result()
    .then(
      () => true,
      () => true,
    );
  const timeout = new Promise<boolean>((r) => setTimeout(() => r(false), 5000).unref());
  return Promise.race([closed, timeout]);
}

/** The task of the deploy workflow running on the environment: its TaskId search attribute, else the row. */
async function runningTaskId(deps: Deps, environmentId: string): Promise<string | null> {
  const workflowId = workflowIds.environmentDeploy(environmentId);
  try {
    const desc = await deps.temporal.workflow.getHandle(workflowId).describe();
    const id = desc.typedSearchAttributes.get(searchAttributeKeys.TaskId);
    if (id) return id;
  } catch {
    // fall back on the database
  }
  return (await runningDeployTask(deps.knex, environmentId))?.id ?? null;
}
