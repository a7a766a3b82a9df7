/**
 * Shapes shared by every task's workflow, the activities and the API's task client (core/tasks.ts).
 * Deterministic: no I/O here (imported by the workflow bundle).
 */
import type { AccountVia, TaskKind, TaskType } from './vocabulary';

/**
 * The whole task row as the API chose it. The API starts the workflow with it, then inserts it; the
 * workflow's first activity inserts the same row (ON CONFLICT DO NOTHING), so neither exists without the
 * other whatever crashes in between.
 */
export interface TaskRecord<T extends TaskType = TaskType> {
  id: string;
  team_id: string;
  project_id: string | null;
  environment_id: string | null;
  kind: TaskKind;
  type: T;
  account_user_id: string | null;
  account_via: AccountVia;
  workflow_id: string;
  /**
   * What the type needs (never a secret); shown on the task as `params`. Its schema is the type's (db/task-params.ts):
   * the workflow reads it parsed (runTask's `params`), never from here.
   */
  params: Record<string, unknown>;
  created_at: string;
}

/** The input of every task's workflow (of type T): the record, plus what its type adds (never a secret). */
export interface TaskWorkflowInput<T extends TaskType = TaskType> {
  task: TaskRecord<T>;
}

export interface TaskResult {
  [key: string]: unknown;
}

export interface TaskOutcome {
  status: 'succeeded' | 'failed' | 'cancelled';
  result?: TaskResult;
  error?: string;
}
