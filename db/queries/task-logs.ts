/**
 * Reading a task's log (`task_logs`: task_id, seq, chunk); the activities write it (activities/toolkit/task-log.ts).
 * The log is the chunks concatenated in seq order.
 */
import type { Knex } from 'knex';

/** The task's chunks after seq `after`, in order. */
export async function taskLogChunks(
  knex: Knex,
  taskId: string,
  after: number,
): Promise<Array<{ seq: number; chunk: string }>> {
  return knex('task_logs').where({ task_id: taskId }).andWhere('seq', '>', after).orderBy('seq').select('seq', 'chunk');
}
