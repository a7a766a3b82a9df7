/**
 * The task client: starts (through core/temporal-starts.ts), reads and cancels the workflows of tasks. Starting a task writes
 * its row and starts its workflow so that neither exists without the other: the workflow gets the whole
 * task record in its input and its first activity upserts the row; the API's own insert is committed only
 * after the start succeeded (a refused start leaves nothing; a crash after the start leaves the workflow to
 * insert the row). Every workflow carries the six search attributes and a readable summary.
 *
 * One change at a time per environment: exclusive types (db/vocabulary.ts) share the environment's change
 * workflow id with the FAIL conflict policy, so Temporal itself refuses a second one; the answer is 409
 * `deploy_in_progress` (the running task is a deployment) or `task_in_progress`, with its `task_id`.
 * The types that restart web processes (apply_variables, reboot, maintenance) are not refused: their workflow
 * keeps them `pending` while an exclusive task runs there, and the other way round (db/queries/task-gate.ts).
 */
import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { Knex } from 'knex';
import type { Deps } from '../system/deps';
import type { Actor } from './actor';
import { errors } from './errors';
import { Task } from '../db/models/task';
import { FINAL_TASK_STATUSES, TASK_TYPES, type AccountVia, type TaskType } from '../db/vocabulary';
import { cancelPendingTask, insertTask, runningExclusiveTask } from '../db/queries/tasks';
import { workflowIds } from '../db/workflow-names';
import type { TaskRecord } from '../db/task-record';
import type { TaskParamsInput } from '../db/task-params';
import { metrics } from './metrics';
import { searchAttributeKeys, startWorkflow, type WorkflowArgs } from './temporal-starts';

/**
 * Test hook, nothing else reads it: VC_FAULT_INJECT=kill-after-workflow-start makes this API process SIGKILL
 * itself right after a task's workflow start returns, before the task row is committed (the crash that the
 * workflow's first activity covers; test/workflows/api-crash.test.ts). Read once, at startup.
 */
const KILL_AFTER_WORKFLOW_START = process.env.VC_FAULT_INJECT === 'kill-after-workflow-start';

/** Who asked: a caller of the API, or the system itself (auto-deploy, a schedule). */
export type TaskRequester =
  | Actor
  | { via: Extract<AccountVia, 'auto_deploy' | 'schedule' | 'system'>; userId: string | null };

/** The workflow that runs tasks of type T (db/vocabulary.ts), by name. */
type TaskWorkflowName<T extends TaskType> = (typeof TASK_TYPES)[T]['workflow'];
/** What the workflow of type T takes beside the task record. */
type TaskExtraInput<T extends TaskType> = Omit<WorkflowArgs<TaskWorkflowName<T>>[0], 'task'>;

/**
 * A task to start, typed from the task registry: `params` by the type's schema (db/task-params.ts), `input` by its
 * workflow's argument (workflows/index.ts, types only), so a wrong param is a type error here.
 */
export type TaskSpec<T extends TaskType> = {
  type: T;
  teamId: string;
  projectId: string | null;
  environmentId: string | null;
  /** What the type needs, kept on the row and given to the workflow. Never a secret. */
  params: TaskParamsInput<T>;
  /** One readable line for the Temporal Web UI. */
  summary: string;
  /**
   * A check that must hold when the row commits (a resize's room on its host): run in the transaction that
   * inserts the row, before the workflow starts; what it locks is held until the commit. It throws to refuse.
   */
  guard?: (trx: Knex.Transaction) => Promise<void>;
} & ({} extends TaskExtraInput<T>
  ? { input?: undefined }
  : {
      /** More workflow input beside the task record (never a secret). */
      input: TaskExtraInput<T>;
    });

const account = (by: TaskRequester) =>
  'kind' in by
    ? { account_user_id: by.user.id, account_via: by.via as AccountVia }
    : { account_user_id: by.userId, account_via: by.via };

/** The workflow id a task of this type gets. */
function taskWorkflowId(type: TaskType, taskId: string, environmentId: string | null): string {
  if (TASK_TYPES[type].exclusive) {
    if (!environmentId) throw new Error(`a ${type} task needs its environment`);
    return workflowIds.environmentChange(environmentId);
  }
  return workflowIds.task(type, taskId);
}

/** Starts a task (see the file comment). Returns its row; routes present it and answer 202. */
export async function startTask<T extends TaskType>(deps: Deps, by: TaskRequester, spec: TaskSpec<T>): Promise<Task> {
  const def = TASK_TYPES[spec.type];
  const taskId = randomUUID();
  const workflowId = taskWorkflowId(spec.type, taskId, spec.environmentId);
  const task: TaskRecord = {
    id: taskId,
    team_id: spec.teamId,
    project_id: spec.projectId,
    environment_id: spec.environmentId,
    kind: def.kind,
    type: spec.type,
    ...account(by),
    workflow_id: workflowId,
    params: spec.params,
    created_at: new Date().toISOString(),
  };
  const start = async (): Promise<string> => {
    const began = performance.now();
    const runId = await startWorkflow(deps, {
      workflow: def.workflow,
      workflowId,
      // checked against the type's workflow by TaskSpec<T>; TypeScript cannot follow a generic T this far
      args: [{ ...spec.input, task }] as unknown as WorkflowArgs<TaskWorkflowName<T>>,
      summary: spec.summary,
      searchAttributes: {
        TeamId: spec.teamId,
        ProjectId: spec.projectId,
        EnvironmentId: spec.environmentId,
        TaskKind: def.kind,
        TaskType: spec.type,
        TaskId: taskId,
      },
      whenOpen: def.exclusive ? 'fail' : undefined,
    });
    metrics.workflowStart.observe({ type: spec.type }, (performance.now() - began) / 1000);
    return runId;
  };

  // Usually: the row is written in a transaction that overlaps the workflow start and commits only once
  // the start has succeeded. A refused start rolls it back (neither exists); a crash before the commit
  // leaves the workflow, whose first activity inserts the same row (waiting on this transaction's row
  // lock, if any, then upserting). The start is sent first, and the transaction's BEGIN and insert go
  // meanwhile, so that only the COMMIT follows the start on the request's path. The commit does not wait
  // for the WAL flush (synchronous_commit off, this transaction only): the row is visible at once, and
  // should PostgreSQL crash before the flush, the workflow's first activity inserts it again from its input,
  // as after an API crash.
  // With a guard, the start waits for it: a workflow already started could not be taken back by its refusal.
  let started = spec.guard ? undefined : start();
  started?.catch(() => undefined); // awaited below; a refusal before the transaction opened is not unhandled
  let trx: Knex.Transaction | undefined;
  try {
    trx = await deps.knex.transaction();
    const open = trx;
    if (spec.guard) {
      await spec.guard(open);
      started = start();
      started.catch(() => undefined);
    }
    const insert = async () => {
      await open.raw('SET LOCAL synchronous_commit TO OFF');
      // run_id is left to the workflow's first activity (it records its own run); until then a cancel
      // addresses the workflow id, whose one open run is this task's.
      return insertTask(open, task);
    };
    const [row] = await Promise.all([insert(), started]);
    if (KILL_AFTER_WORKFLOW_START) process.kill(process.pid, 'SIGKILL');
    await trx.commit();
    return row;
  } catch (err) {
    await trx?.rollback().catch(() => undefined);
    if (!(err instanceof WorkflowExecutionAlreadyStartedError) || !spec.environmentId) throw err;
  }

  // The environment's change workflow is open. Its task may have just ended (the workflow is closing):
  // wait for that and start again, outside any transaction; else refuse, naming the running task.
  for (let attempt = 0; ; attempt++) {
    const running = await runningTask(deps, spec.environmentId);
    if (!(attempt < 3 && running && (await workflowClosing(deps, workflowId, running.id)))) throw inProgress(running);
    try {
      return await startAndInsert(deps.knex, spec.guard, async (db) => {
        const runId = await start();
        if (KILL_AFTER_WORKFLOW_START) process.kill(process.pid, 'SIGKILL');
        return insertTask(db, { ...task, run_id: runId });
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }
}

/** Runs `startThenInsert` as is, or, with a guard, in a transaction that the guard checks first. */
async function startAndInsert(
  knex: Knex,
  guard: ((trx: Knex.Transaction) => Promise<void>) | undefined,
  startThenInsert: (db: Knex) => Promise<Task>,
): Promise<Task> {
  if (!guard) return startThenInsert(knex);
  return knex.transaction(async (trx) => {
    await guard(trx);
    return startThenInsert(trx);
  });
}

/** 409 naming the running exclusive task: `deploy_in_progress` for a deployment, else `task_in_progress`. */
function inProgress(running: { id: string; kind: string } | null) {
  if (!running || running.kind === 'deployments') {
    return errors.refusal('deploy_in_progress', {
      task_id: running?.id ?? null,
    });
  }
  return errors.refusal('task_in_progress', {
    task_id: running.id,
  });
}

/**
 * Refuses early (409) when an exclusive task is pending or running on the environment and its workflow is
 * open (a row left `running` by a terminated workflow does not block). For checks that must answer before
 * what the new task would need is looked at; startTask itself is the authority.
 */
export async function assertNoExclusiveTask(deps: Deps, environmentId: string): Promise<void> {
  const running = await runningExclusiveTask(deps.knex, environmentId);
  if (running && (await workflowOpen(deps, running.workflow_id))) throw inProgress(running);
}

/** Whether the workflow is still open. */
async function workflowOpen(deps: Deps, workflowId: string): Promise<boolean> {
  try {
    const desc = await deps.temporal.workflow.getHandle(workflowId).describe();
    return desc.status.name === 'RUNNING';
  } catch {
    return false;
  }
}

/**
 * True when the task of the still-open workflow has already ended (its last activity recorded the
 * outcome; the workflow closes right after) and the workflow closed within a short wait.
 */
async function workflowClosing(deps: Deps, workflowId: string, taskId: string): Promise<boolean> {
  const row = await Task.query(deps.knex).findById(taskId);
  if (!row || !FINAL_TASK_STATUSES.includes(row.status)) return false;
  const desc = await deps.temporal.workflow
    .getHandle(workflowId)
    .describe()
    .catch(() => undefined);
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

/** The task of the exclusive workflow running on the environment: its search attributes, else the row. */
async function runningTask(deps: Deps, environmentId: string): Promise<{ id: string; kind: string } | null> {
  const workflowId = workflowIds.environmentChange(environmentId);
  try {
    const desc = await deps.temporal.workflow.getHandle(workflowId).describe();
    const id = desc.typedSearchAttributes.get(searchAttributeKeys.TaskId);
    const kind = desc.typedSearchAttributes.get(searchAttributeKeys.TaskKind);
    if (id) return { id, kind: kind ?? 'deployments' };
  } catch {
    // fall back on the database
  }
  const row = await runningExclusiveTask(deps.knex, environmentId);
  return row ? { id: row.id, kind: row.kind } : null;
}

/**
 * Cancels a task nothing has started: pending -> cancelled by compare-and-set, then its workflow run is
 * asked to cancel (the row decides: whatever takes the task later finds it cancelled and does not start
 * it, so a Temporal hiccup here changes nothing for the outcome). False when something had started it.
 */
export async function cancelTask(deps: Deps, task: Pick<Task, 'id' | 'workflow_id' | 'run_id'>): Promise<boolean> {
  if (!(await cancelPendingTask(deps.knex, task.id))) return false;
  try {
    await deps.temporal.workflow.getHandle(task.workflow_id, task.run_id ?? undefined).cancel();
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) {
      deps.logger.warn(
        { taskId: task.id, err: (err as Error).message },
        'task cancelled; its workflow could not be asked to cancel',
      );
    }
  }
  return true;
}
