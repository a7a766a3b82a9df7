/**
 * The gate between an environment's changes and the tasks that restart its web processes (CONTRACT "Tasks of
 * every kind"): an exclusive task (deploy, restore, storage_move...) and a waiting one (apply_variables, reboot,
 * maintenance: TaskTypeDef.waits) never run beside each other on one environment. Whichever comes second stays
 * `pending` and its workflow asks again later (workflows/task-runner.ts). pending -> running happens under a
 * transaction-scoped advisory lock of the environment, so two tasks cannot both see the other not running.
 */
import type { Knex } from 'knex';
import { EXCLUSIVE_TASK_TYPES, TASK_TYPES, type TaskType, WAITING_TASK_TYPES } from '../vocabulary';

/** A running task that keeps another from starting. */
export interface GateBlocker {
  id: string;
  type: string;
  workflow_id: string;
  run_id: string | null;
}

/**
 * What starting the task came to: `true` it runs now (also when it already ran: a retried activity), `false`
 * it was cancelled (or ended) before anything started it, `waiting` another task keeps it pending for now.
 */
export type GatedStart = boolean | { waiting: GateBlocker };

/** The types a task of `type` may not run beside on its environment (none for most types). */
function typesKeptApart(type: string): readonly TaskType[] {
  const def = TASK_TYPES[type as TaskType];
  if (!def) return [];
  if (def.exclusive) return WAITING_TASK_TYPES;
  return 'waits' in def && def.waits ? EXCLUSIVE_TASK_TYPES : [];
}

/**
 * pending -> running, unless a task of the types it is kept apart from runs on its environment. `stillRuns`
 * says whether a blocker's workflow is open (a row left `running` by a workflow that was terminated does not
 * block); it is asked inside the lock, so keep it short.
 */
export async function startTaskGated(
  knex: Knex,
  taskId: string,
  stillRuns: (blocker: GateBlocker) => Promise<boolean>,
): Promise<GatedStart> {
  return knex.transaction(async (trx) => {
    const task = await trx('tasks').where({ id: taskId }).first('status', 'type', 'environment_id');
    if (!task) return false;
    if (task.status !== 'pending') return task.status === 'running';
    const apart = typesKeptApart(task.type);
    if (task.environment_id && apart.length > 0) {
      await trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [`task-gate:${task.environment_id}`]);
      const running: GateBlocker[] = await trx('tasks')
        .where({ environment_id: task.environment_id, status: 'running' })
        .whereIn('type', apart as TaskType[])
        .whereNot({ id: taskId })
        .select('id', 'type', 'workflow_id', 'run_id');
      for (const blocker of running) {
        if (await stillRuns(blocker)) return { waiting: blocker };
      }
    }
    // clock_timestamp(), not now(): now() is when this transaction began, which can be before the blocker it just
    // saw end had finished (its finished_at), and a task would seem to have started before the one it waited for.
    const moved = await trx('tasks')
      .where({ id: taskId, status: 'pending' })
      .update({ status: 'running', started_at: trx.raw('clock_timestamp()') });
    return moved > 0;
  });
}
