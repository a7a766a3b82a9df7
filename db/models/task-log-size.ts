import { Model } from 'objection';

/** How much of a task's log is kept and dropped (migration 121); see activities/tasks/log-writer.ts. */
export class TaskLogSize extends Model {
  static tableName = 'task_log_sizes';
  static idColumn = 'task_id';
  task_id!: string;
  bytes!: number;
  dropped!: number;
  marker_seq!: number | null;
}
