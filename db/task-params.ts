/**
 * The params of each task type (the task row's `params`, what its workflow is given): one zod schema a type.
 * The task client types `startTask` from them (core/tasks.ts) and `runTask` parses them once
 * (workflows/task-runner.ts), so no workflow reads a param by name or casts. Never a secret.
 * Deterministic: no I/O here (imported by the workflow bundle).
 */
import { z } from 'zod';
import type { TaskType } from './vocabulary';

const id = z.string().min(1);
const none = z.object({});
const server = { server_id: id, server_name: z.string() };
const certificate = z.object({ domain_id: id, hostname: z.string() });

export const TASK_PARAMS = {
  deploy: z.object({ git_ref: z.string(), skip_steps: z.boolean() }),
  redeploy: z.object({ skip_steps: z.boolean() }),
  rollback: none,
  build: z.object({ git_ref: z.string() }),
  apply_variables: none,
  cdn_clear: z.object({ paths: z.array(z.string()) }),
  certificate_issue: certificate,
  certificate_renew: certificate,
  maintenance_on: z.object({ note: z.string().optional() }),
  maintenance_off: none,
  backup: z.object({ backup_id: id, destination_id: id, trigger: z.enum(['manual', 'scheduled']) }),
  // a snapshot's restore, or a point-in-time restore (CONTRACT "Point-in-time recovery")
  restore: z.union([z.object({ backup_id: id }), z.object({ point_in_time: z.string() })]),
  sync: z.object({ from_environment_id: id }),
  reset_database: none,
  verify: z.object({ backup_id: id }),
  service_create: z.object({ service_id: id, kind: z.string(), plan: z.string(), version: z.string() }),
  resize: z.object({
    ...server,
    from_plan: z.string(),
    plan: z.string(),
    cpu: z.number(),
    memory_mb: z.number(),
    disk_gb: z.number(),
  }),
  reboot: z.object(server),
  scale: z.object({ ...server, from: z.number().int(), instances: z.number().int() }),
  reshape: z.object({
    service_id: id,
    from_shape: z.enum(['combined', 'separate']),
    shape: z.enum(['combined', 'separate']),
    plan: z
      .object({
        id: z.string(),
        cpu: z.number(),
        memory_mb: z.number(),
        disk_gb: z.number(),
        monthly_price: z.number(),
        currency: z.string(),
      })
      .nullable(),
  }),
  discard_old_database: z.object({ service_id: id }),
  storage_move: z.object({ disk: z.enum(['database', 'files']), disk_id: id, from: z.string(), to: z.string() }),
  storage_discard: none,
  volume_grow: z.object({ volume_id: id, from_gb: z.number(), size_gb: z.number(), monthly_price_delta: z.number() }),
  // why the environment moves (CONTRACT "Hosts"); never a host's name: those are the operator's
  move: z.object({ reason: z.enum(['drain', 'lost', 'evacuate']), backup_id: id.optional() }),
} as const satisfies Record<TaskType, z.ZodType>;

/** The params a task of type T is started with (what its caller gives). */
export type TaskParamsInput<T extends TaskType> = z.input<(typeof TASK_PARAMS)[T]>;
/** The params its workflow reads, parsed. */
export type TaskParams<T extends TaskType> = z.output<(typeof TASK_PARAMS)[T]>;

/** The params of a task of type T, parsed by its schema (a ZodError names what is wrong). */
export function parseTaskParams<T extends TaskType>(type: T, params: unknown): TaskParams<T> {
  return TASK_PARAMS[type].parse(params) as TaskParams<T>;
}
