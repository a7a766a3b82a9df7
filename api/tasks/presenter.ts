import { z } from 'zod';
import type { Task } from '../../db/models/task';
import { iso, isoOrNull } from '../../core/time';
import { ACCOUNT_VIA, TASK_KINDS, TASK_STATUSES } from '../../db/vocabulary';
import { taskPhases } from '../../db/queries/task-phases';
import type { TaskRow } from './service';

export const taskSchema = z.strictObject({
  id: z.string(),
  kind: z.enum(TASK_KINDS),
  type: z.string(),
  status: z.enum(TASK_STATUSES),
  team_id: z.string(),
  project_id: z.string().nullable(),
  environment_id: z.string().nullable(),
  account: z.strictObject({ id: z.string().nullable(), name: z.string().nullable(), via: z.enum(ACCOUNT_VIA) }),
  params: z.record(z.string(), z.unknown()),
  result: z.record(z.string(), z.unknown()).nullable(),
  error: z.string().nullable(),
  workflow_id: z.string(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
});

/** The task as clients see it (CONTRACT "Tasks"); `account` is who asked, and how. */
export function presentTask(
  task: Task,
  account: { id: string | null; name: string | null },
): z.infer<typeof taskSchema> {
  return {
    id: task.id,
    kind: task.kind,
    type: task.type,
    status: task.status,
    team_id: task.team_id,
    project_id: task.project_id,
    environment_id: task.environment_id,
    account: { id: account.id, name: account.name, via: task.account_via },
    params: task.params ?? {},
    result: task.result ?? null,
    error: task.error ?? null,
    workflow_id: task.workflow_id,
    created_at: iso(task.created_at),
    started_at: isoOrNull(task.started_at),
    finished_at: isoOrNull(task.finished_at),
  };
}

/** A task read with its account's name (api/tasks/service.ts). */
export const presentTaskRow = (row: TaskRow) =>
  presentTask(row, { id: row.account_user_id, name: row.account_name ?? null });

/** One task with its phases; with `tail`, the end of its log and the seq to read on from. */
export function presentTaskDetail({ row, tail }: { row: TaskRow; tail?: { text: string; seq: number } }) {
  return {
    ...presentTaskRow(row),
    phases: taskPhases(row),
    ...(tail ? { log_tail: tail.text, log_seq: tail.seq } : {}),
  };
}
