/**
 * The phases of a deploy-like task (CONTRACT "Tasks"): the moment each ended, in `tasks.phases` (an object
 * `{name: ISO time}`, merged into: a phase run again by a retried activity keeps its latest moment).
 * `queued` and `started` are the row's own created_at and started_at. Read back in the fixed order below;
 * a phase the task did not reach is absent.
 */
import type { Knex } from 'knex';
import type { TaskType } from '../vocabulary';

export const TASK_PHASES = [
  'queued',
  'started',
  'build_done',
  'release_ready',
  'process_started',
  'healthy',
  'edge_switched',
  'old_stopped',
] as const;
export type TaskPhase = (typeof TASK_PHASES)[number];

/** The task types that record phases (`move` once it exists). */
const PHASED_TASK_TYPES: readonly string[] = [
  'deploy',
  'redeploy',
  'rollback',
  'build',
  'apply_variables',
  'reboot',
  'resize',
  'scale',
  'restore',
  'move',
] satisfies readonly (TaskType | 'move')[];

/** Merges `phases` (name -> ISO time) into the task's record, one statement. */
export async function recordTaskPhases(
  knex: Knex,
  taskId: string,
  phases: Partial<Record<TaskPhase, string>>,
): Promise<void> {
  if (Object.keys(phases).length === 0) return;
  await knex.raw(`UPDATE tasks SET phases = COALESCE(phases, '{}'::jsonb) || ?::jsonb WHERE id = ?`, [
    JSON.stringify(phases),
    taskId,
  ]);
}

/** The task's phases in order, as `{name, at}` (ISO); empty for a type that records none. */
export function taskPhases(task: {
  type: string;
  created_at: Date | string;
  started_at: Date | string | null;
  phases?: Record<string, string> | null;
}): { name: TaskPhase; at: string }[] {
  if (!PHASED_TASK_TYPES.includes(task.type)) return [];
  const iso = (d: Date | string) => new Date(d).toISOString();
  const at: Partial<Record<TaskPhase, string>> = { ...(task.phases ?? {}), queued: iso(task.created_at) };
  if (task.started_at) at.started = iso(task.started_at);
  return TASK_PHASES.filter((name) => at[name]).map((name) => ({ name, at: iso(at[name]!) }));
}
