/**
 * The generic task runner: every task's workflow runs its body between recording its task row and ending
 * it (succeeded with the result, failed with a readable reason, cancelled), writing the outcome to the
 * task log. A task workflow is `runTask(input, async ({ log, start }) => { await start(); ...; return result })`.
 * Deterministic code only: the world is reached through activities.
 */
import {
  ActivityFailure,
  CancellationScope,
  CancelledFailure,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  sleep,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import type { TaskActivities } from '../activities/tasks';
import type { IntegrationActivities } from '../activities/integrations';
import type { TaskOutcome, TaskResult, TaskWorkflowInput } from '../db/task-record';
import { parseTaskParams, type TaskParams } from '../db/task-params';
import type { TaskType } from '../db/vocabulary';
import { fault, profiles } from './profiles';

export type { TaskWorkflowInput } from '../db/task-record';

export interface TaskContext<T extends TaskType = TaskType> {
  /** The task's params, parsed by its type's schema (db/task-params.ts). */
  params: TaskParams<T>;
  /** Appends lines of the workflow's own (headings, outcomes) to the task log. */
  log: (...lines: string[]) => Promise<void>;
  /**
   * pending -> running; ends the task `cancelled` when it was cancelled before anything started it. A task kept
   * apart from another (an exclusive change and apply_variables/reboot/maintenance, db/queries/task-gate.ts)
   * stays pending until that one has ended.
   */
  start: () => Promise<void>;
}

/**
 * The task row's bookkeeping touches only the database: local activities, run by the worker that runs the
 * workflow, without a round trip through a task queue each (a go-live's path is a few of these).
 */
export const taskActs = proxyLocalActivities<TaskActivities>(profiles.bookkeeping);

const integrationActs = proxyActivities<IntegrationActivities>(profiles.quick);

/** Tells the team's integrations how the task ended; never changes the task's outcome. */
async function announce(taskId: string): Promise<void> {
  await integrationActs.announceTaskEnd({ taskId }).catch(() => undefined);
}

/** Ends the task: raised inside the runner with the readable reason. */
class TaskFailed extends Error {}
class TaskCancelled extends Error {}

export function failure(message: string): never {
  throw new TaskFailed(message);
}

/** The task was cancelled before anything started it. */
export function cancelled(): never {
  throw new TaskCancelled('cancelled');
}

/** A step sent to a host's queue that no agent took in time (workflows/host-queue.ts): its machine is down. */
const HOST_UNAVAILABLE =
  'host_unavailable: the machine this environment runs on is down: no one took up the work in time, so it was not done. ' +
  'Try again once the machine is back';

/** A readable reason out of what a workflow step threw. */
export function describeError(err: unknown): string {
  let e: unknown = err;
  while (e instanceof ActivityFailure && e.cause) e = e.cause;
  if (e instanceof TimeoutFailure && e.timeoutType === 'SCHEDULE_TO_START') return HOST_UNAVAILABLE;
  if (e instanceof TimeoutFailure) return 'a step did not finish in time';
  if (e instanceof Error) return e.message || e.name;
  return String(e);
}

/** The task's params, parsed once; params its type's schema refuses end the task failed, naming them. */
function readParams<T extends TaskType>(task: TaskWorkflowInput<T>['task']): TaskParams<T> {
  try {
    return parseTaskParams(task.type, task.params);
  } catch (err) {
    const issues = (err as { issues?: Array<{ path: PropertyKey[]; message: string }> }).issues ?? [];
    const named = issues.map((i) => `${i.path.map(String).join('.') || 'params'}: ${i.message}`).join('; ');
    return failure(`the task's params are not those of a ${task.type} task (${named || describeError(err)})`);
  }
}

/**
 * Runs a task's body between its recording and its ending: records the row, runs `body`, and ends the task
 * (succeeded with the result, failed with the reason, cancelled) in the log and the row.
 */
export async function runTask<T extends TaskType, R extends TaskResult>(
  input: TaskWorkflowInput<T>,
  body: (ctx: TaskContext<T>) => Promise<R>,
): Promise<TaskOutcome & { result?: R }> {
  const taskId = input.task.id;
  const record = { ...input.task, run_id: workflowInfo().firstExecutionRunId };
  const log = (...lines: string[]) => taskActs.appendTaskLog({ taskId, lines });
  const start = async () => {
    for (let attempt = 0; ; attempt++) {
      const started = await taskActs.startTask(taskId);
      if (started === true) return;
      if (started === false) cancelled();
      if (attempt === 0) await log(`==> Waiting for ${started.waiting.type} (task ${started.waiting.id}) to end`);
      await sleep(Math.min(500 * 2 ** attempt, 5000));
    }
  };
  try {
    await taskActs.recordTask(record);
    const result = await body({ params: readParams(input.task), log, start });
    await taskActs.finishTask({ taskId, status: 'succeeded', result });
    await announce(taskId);
    return { status: 'succeeded', result };
  } catch (err) {
    // The workflow was asked to cancel: it ends cancelled, also when the activity it waited on could not say
    // so itself (e.g. its worker died before it noticed, and it timed out).
    const cancelRequested = CancellationScope.current().consideredCancelled;
    if (err instanceof TaskCancelled || isCancellation(err) || cancelRequested) {
      await CancellationScope.nonCancellable(async () => {
        await taskActs.recordTask(record);
        await log('==> Cancelled');
        await taskActs.finishTask({ taskId, status: 'cancelled', error: 'cancelled' });
      });
      if (isCancellation(err)) throw err;
      if (cancelRequested) throw new CancelledFailure('cancelled');
      return { status: 'cancelled', error: 'cancelled' };
    }
    const message = err instanceof TaskFailed ? err.message : describeError(err);
    await CancellationScope.nonCancellable(async () => {
      await taskActs.recordTask(record);
      await log(`==> Failed: ${message}`);
      await taskActs.finishTask({ taskId, status: 'failed', error: message });
      await announce(taskId);
    });
    throw fault('TaskFailed', message);
  }
}
