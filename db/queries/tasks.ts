/**
 * Task state transitions, each one idempotent and guarded by compare-and-set in PostgreSQL:
 *   pending -> running            (only from pending: a task cancelled while pending is never started)
 *   pending -> cancelled          (only from pending: "cancellable only while nothing has started it")
 *   pending|running -> succeeded|failed|cancelled   (sets finished_at once)
 *   pending|running -> failed     (its workflow ended without it: terminated or timed out in Temporal)
 * Used by the workflows' activities and by the API's cancel.
 */
import type { Knex } from 'knex';
import type { TaskRecord } from '../task-record';
import { Task } from '../models/task';
import { failTaskBuildingRelease } from './releases';
import { workflowIds } from '../workflow-names';

import type { TaskStatus } from '../vocabulary';

/** Inserts the task row unless it exists (the API and the workflow both call this with the same record). */
export async function insertTask(knex: Knex, task: TaskRecord & { run_id?: string | null }): Promise<Task> {
  // One statement whoever comes first (the API after starting the workflow, or the workflow's first
  // activity after an API crash): the row is created once; a known run id fills a missing one.
  const [row] = await knex('tasks')
    .insert({
      id: task.id,
      team_id: task.team_id,
      project_id: task.project_id,
      environment_id: task.environment_id,
      kind: task.kind,
      type: task.type,
      status: 'pending',
      account_user_id: task.account_user_id,
      account_via: task.account_via,
      workflow_id: task.workflow_id,
      run_id: task.run_id ?? null,
      params: JSON.stringify(task.params ?? {}),
      created_at: task.created_at,
    })
    .onConflict('id')
    .merge({ run_id: knex.raw('COALESCE(tasks.run_id, EXCLUDED.run_id)') })
    .returning('*');
  return Task.fromDatabaseJson(row);
}

/**
 * pending -> running. True when the task runs now (also when it already ran: a retried activity);
 * false when it was cancelled (or finished) before anything started it.
 */
export async function markTaskRunning(knex: Knex, taskId: string): Promise<boolean> {
  const moved = await knex('tasks')
    .where({ id: taskId, status: 'pending' })
    .update({ status: 'running', started_at: knex.fn.now() });
  if (moved > 0) return true;
  const row = await knex('tasks').where({ id: taskId }).first('status');
  return row?.status === 'running';
}

/** pending -> cancelled. True when this call cancelled it; false when something had started it (or it ended). */
export async function cancelPendingTask(knex: Knex, taskId: string): Promise<boolean> {
  return knex.transaction(async (trx) => {
    const moved = await trx('tasks')
      .where({ id: taskId, status: 'pending' })
      .update({ status: 'cancelled', finished_at: trx.fn.now(), error: 'cancelled before it started' });
    // as finishTask does, with the cancel, not when the workflow gets to it: a build waiting for capacity began
    // its release
    if (moved > 0) await failTaskBuildingRelease(trx, taskId);
    return moved > 0;
  });
}

/**
 * pending|running -> a final status. A task that already ended keeps its first ending. One that did not succeed
 * fails the release it began building, in the same transaction: no reader sees the task ended and its release
 * still `building`.
 */
export async function finishTask(
  knex: Knex,
  taskId: string,
  outcome: {
    status: 'succeeded' | 'failed' | 'cancelled';
    result?: Record<string, unknown> | null;
    error?: string | null;
  },
): Promise<TaskStatus | undefined> {
  return knex.transaction(async (trx) => {
    await trx('tasks')
      .where({ id: taskId })
      .whereIn('status', ['pending', 'running'])
      .update({
        status: outcome.status,
        result: outcome.result ? JSON.stringify(outcome.result) : null,
        error: outcome.error ?? null,
        finished_at: trx.fn.now(),
      });
    const row = await trx('tasks').where({ id: taskId }).first('status');
    if (row?.status !== 'succeeded') await failTaskBuildingRelease(trx, taskId);
    return row?.status;
  });
}

/**
 * The exclusive task (deploy, restore, resize...) pending or running on the environment, newest first (they
 * share the environment's one change workflow id), as far as the tasks table knows.
 */
export async function runningExclusiveTask(
  knex: Knex,
  environmentId: string,
): Promise<{ id: string; workflow_id: string; kind: Task['kind']; type: string } | undefined> {
  return knex('tasks')
    .where({ workflow_id: workflowIds.environmentChange(environmentId) })
    .whereIn('status', ['pending', 'running'])
    .orderBy('seq', 'desc')
    .first('id', 'workflow_id', 'kind', 'type');
}

/** Deletes every task row of the environment (the prune of a deleted environment; their logs go with them). */
export async function deleteEnvironmentTasks(knex: Knex, environmentId: string): Promise<void> {
  await knex('tasks').where({ environment_id: environmentId }).delete();
}

/**
 * The next few open tasks (pending or running) created more than `seconds` ago, in order of `seq` after
 * `afterSeq`: each round of the orphan check (activities/tasks closeOrphanedTasks) asks Temporal about these and
 * goes on from the last, so that every open task is asked about within ⌈open ÷ limit⌉ rounds at a bounded cost,
 * however many tasks legitimately run for long.
 */
export async function openTasksAfter(
  knex: Knex,
  seconds: number,
  afterSeq: number,
  limit: number,
): Promise<Array<{ id: string; workflow_id: string; run_id: string | null; seq: number }>> {
  const rows = await knex('tasks')
    .whereIn('status', ['pending', 'running'])
    .where('created_at', '<', knex.raw('now() - make_interval(secs => ?)', [seconds]))
    .where('seq', '>', afterSeq)
    .orderBy('seq')
    .limit(limit)
    .select('id', 'workflow_id', 'run_id', 'seq');
  return rows.map((r) => ({ ...r, seq: Number(r.seq) }));
}
