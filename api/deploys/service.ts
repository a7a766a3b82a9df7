/**
 * Deploy, redeploy, rollback and build: each creates a task and starts its workflow so that neither
 * exists without the other. Order: choose the task id, start the workflow with the whole task record in
 * its input (deploys: the environment's one deploy workflow id, conflict policy FAIL), then insert the
 * row; the workflow's first activity inserts the same row (ON CONFLICT DO NOTHING). A failed start
 * inserts nothing; a crash after the start leaves the workflow to insert it.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, WorkflowIdConflictPolicy } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { Deps } from '../../system/deps';
import type { Actor } from '../lib/actor';
import { authorize } from '../lib/policy';
import { errors } from '../lib/errors';
import { Environment } from '../../db/models/environment';
import { Project } from '../../db/models/project';
import { Task } from '../../db/models/task';
import { presentTask } from '../tasks/presenter';
import { insertTask } from '../../activities/tasks/transitions';
import { liveRelease, rollbackTarget } from '../../activities/deploys/queries';
import { workflowIds } from '../../workflows/shared';
import { taskSummary, type DeployWorkflowInput, type TaskRecord, type TaskType } from '../../workflows/deploys-shared';
import type { deployEnvironment } from '../../workflows/deploy';
import type { buildEnvironment } from '../../workflows/build';

/**
 * Test hook, nothing else reads it: VC_FAULT_INJECT=kill-after-workflow-start makes this API process SIGKILL
 * itself right after a task's workflow start returns, before it inserts the task row (the crash that the
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
  const env = await Environment.query(knex).findById(input.environmentId);
  if (!env) throw errors.notFound('environment');
  await authorize(knex, actor, env.team_id, input.type === 'build' ? 'build' : 'deploy', 'environment');
  const project = await Project.query(knex).findById(env.project_id);
  if (!project) throw errors.notFound('environment');
  if (!project.repository_url) {
    throw errors.conflict('no_repository', 'The project has no repository connected: connect one with POST /projects/{id}/repository');
  }
  if (input.type !== 'build') {
    // Answered before what a redeploy or rollback would need: a deploy runs, so none of them may start now.
    const running = await Task.query(knex)
      .where({ workflow_id: workflowIds.environmentDeploy(env.id) })
      .whereIn('status', ['pending', 'running'])
      .orderBy('seq', 'desc')
      .first();
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

  let runId: string | undefined;
  for (let attempt = 0; runId === undefined; attempt++) {
    try {
      const handle = isBuild
        ? await deps.temporal.workflow.start<typeof buildEnvironment>('buildEnvironment', options)
        : await deps.temporal.workflow.start<typeof deployEnvironment>('deployEnvironment', {
            ...options,
            workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
          });
      runId = handle.firstExecutionRunId;
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      const running = await runningTaskId(deps, workflowId);
      // The running workflow's task has already ended (the workflow is closing): wait for it, then start.
      if (attempt < 3 && running && (await workflowClosing(deps, workflowId, running))) continue;
      throw deployInProgress(running);
    }
  }

  if (KILL_AFTER_WORKFLOW_START) process.kill(process.pid, 'SIGKILL');
  await insertTask(knex, { ...task, run_id: runId });
  const row = await Task.query(knex).findById(taskId);
  return presentTask(row!, { id: actor.user.id, name: actor.user.name });
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
async function runningTaskId(deps: Deps, workflowId: string): Promise<string | null> {
  try {
    const desc = await deps.temporal.workflow.getHandle(workflowId).describe();
    const id = desc.typedSearchAttributes.get(searchAttributeKeys.TaskId);
    if (id) return id;
  } catch {
    // fall back on the database
  }
  const row = await Task.query(deps.knex)
    .where({ workflow_id: workflowId })
    .whereIn('status', ['pending', 'running'])
    .orderBy('seq', 'desc')
    .first();
  return row?.id ?? null;
}
