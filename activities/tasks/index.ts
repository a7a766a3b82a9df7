import type { Deps } from '../../system/deps';
import type { TaskRecord } from '../../workflows/task-record';
import { appendLogChunk } from './log-writer';
import { finishTask, insertTask, markTaskRunning } from '../../db/queries/tasks';

/** Task activities: the workflow records every transition of its task through these (all idempotent). */
export function createTaskActivities(deps: Deps) {
  const { knex } = deps;
  return {
    /** Inserts the task row unless the API already did (one INSERT ... ON CONFLICT (id) statement). */
    async recordTask(task: TaskRecord & { run_id?: string | null }): Promise<void> {
      await insertTask(knex, task);
    },
    /** pending -> running; false when the task was cancelled before anything started it. */
    async startTask(taskId: string): Promise<boolean> {
      return markTaskRunning(knex, taskId);
    },
    async finishTask(input: {
      taskId: string;
      status: 'succeeded' | 'failed' | 'cancelled';
      result?: Record<string, unknown> | null;
      error?: string | null;
    }): Promise<string | undefined> {
      const status = await finishTask(knex, input.taskId, input);
      // A release this task began and did not finish is not going to be: it failed.
      if (status !== 'succeeded')
        await knex('releases').where({ task_id: input.taskId, status: 'building' }).update({ status: 'failed' });
      // Nor is it waiting for build capacity any more.
      await knex('build_queue').where({ task_id: input.taskId }).del();
      return status;
    },
    /** A few lines of the workflow's own (headings, the final outcome) appended to the task log, even beyond its cap. */
    async appendTaskLog(input: { taskId: string; lines: string[] }): Promise<void> {
      if (input.lines.length === 0) return;
      await appendLogChunk(knex, input.taskId, input.lines.join('\n') + '\n', { always: true });
    },
  };
}

export type TaskActivities = ReturnType<typeof createTaskActivities>;
