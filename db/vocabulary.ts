/**
 * The one list of each word the system shares between migrations, models, schemas, the API and the
 * workflows: roles, task kinds, task types and statuses, and how a task was asked for. Deterministic and
 * free of I/O (the workflow bundle imports it).
 */

export const ROLES = ['owner', 'admin', 'developer', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

export const TASK_KINDS = ['deployments', 'backups', 'machines', 'configuration', 'maintenance'] as const;
export type TaskKind = (typeof TASK_KINDS)[number];

export const TASK_STATUSES = ['pending', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
export const FINAL_TASK_STATUSES: readonly TaskStatus[] = ['succeeded', 'failed', 'cancelled'];

/** How a task was asked for: a person (session, cli), a pipeline (token) or the system itself. */
export const ACCOUNT_VIA = ['session', 'cli', 'token', 'auto_deploy', 'schedule', 'system'] as const;
export type AccountVia = (typeof ACCOUNT_VIA)[number];

export interface TaskTypeDef {
  kind: TaskKind;
  /**
   * One change at a time per environment (CONTRACT "Tasks of every kind"): while one exclusive task is
   * pending or running on an environment, another is refused with 409.
   */
  exclusive: boolean;
  /**
   * Starts or stops web processes without being a change itself (apply_variables, reboot, maintenance): such a
   * task is not refused, it waits `pending` while an exclusive task runs on its environment and never runs
   * beside one; an exclusive task waits likewise while one of these runs (db/queries/task-gate.ts).
   */
  waits?: true;
  /**
   * The workflow function (workflows/index.ts) that runs tasks of this type: its name, which types its start
   * (core/tasks.ts); its params' schema is in db/task-params.ts.
   */
  workflow: string;
  /** What the console calls a task of this type. */
  label: string;
}

/**
 * Every task type (the task registry, with db/task-params.ts): adding one is an entry here, its params' schema there,
 * and its workflow.
 */
export const TASK_TYPES = {
  deploy: { kind: 'deployments', exclusive: true, workflow: 'deployEnvironment', label: 'Deploy' },
  redeploy: { kind: 'deployments', exclusive: true, workflow: 'deployEnvironment', label: 'Redeploy' },
  rollback: { kind: 'deployments', exclusive: true, workflow: 'deployEnvironment', label: 'Roll back' },
  build: { kind: 'deployments', exclusive: false, workflow: 'buildEnvironment', label: 'Build' },
  apply_variables: {
    kind: 'configuration',
    exclusive: false,
    waits: true,
    workflow: 'applyVariables',
    label: 'Apply variables',
  },
  cdn_clear: { kind: 'configuration', exclusive: false, workflow: 'clearCdn', label: 'Clear the CDN' },
  certificate_issue: {
    kind: 'configuration',
    exclusive: false,
    workflow: 'issueCertificate',
    label: 'Issue a certificate',
  },
  certificate_renew: {
    kind: 'configuration',
    exclusive: false,
    workflow: 'issueCertificate',
    label: 'Renew a certificate',
  },
  maintenance_on: {
    kind: 'maintenance',
    exclusive: false,
    waits: true,
    workflow: 'setMaintenance',
    label: 'Maintenance on',
  },
  maintenance_off: {
    kind: 'maintenance',
    exclusive: false,
    waits: true,
    workflow: 'setMaintenance',
    label: 'Maintenance off',
  },
  backup: { kind: 'backups', exclusive: false, workflow: 'backupEnvironment', label: 'Back up' },
  restore: { kind: 'backups', exclusive: true, workflow: 'restoreBackup', label: 'Restore' },
  sync: { kind: 'backups', exclusive: true, workflow: 'syncEnvironment', label: 'Sync data' },
  reset_database: { kind: 'backups', exclusive: true, workflow: 'resetDatabase', label: 'Reset the database' },
  verify: { kind: 'backups', exclusive: false, workflow: 'verifyBackup', label: 'Verify a backup' },
  service_create: { kind: 'machines', exclusive: false, workflow: 'createService', label: 'Create a service' },
  resize: { kind: 'machines', exclusive: true, workflow: 'resizeServer', label: 'Resize' },
  reboot: { kind: 'machines', exclusive: false, waits: true, workflow: 'rebootServer', label: 'Reboot' },
  scale: { kind: 'machines', exclusive: true, workflow: 'scaleEnvironment', label: 'Scale' },
  reshape: { kind: 'machines', exclusive: true, workflow: 'reshapeEnvironment', label: 'Reshape' },
  discard_old_database: {
    kind: 'machines',
    exclusive: false,
    workflow: 'discardOldDatabase',
    label: 'Discard the old database',
  },
  storage_move: { kind: 'machines', exclusive: true, workflow: 'moveStorage', label: 'Move a disk' },
  storage_discard: { kind: 'machines', exclusive: false, workflow: 'discardStorage', label: 'Discard old copies' },
  volume_grow: { kind: 'machines', exclusive: false, workflow: 'growVolume', label: 'Grow the volume' },
  move: { kind: 'machines', exclusive: true, workflow: 'moveEnvironment', label: 'Move to another machine' },
} as const satisfies Record<string, TaskTypeDef>;

export type TaskType = keyof typeof TASK_TYPES;
const TASK_TYPE_NAMES = Object.keys(TASK_TYPES) as TaskType[];
/** The exclusive types, and the types that wait for them (TaskTypeDef.waits). */
export const EXCLUSIVE_TASK_TYPES = TASK_TYPE_NAMES.filter((t) => TASK_TYPES[t].exclusive);
export const WAITING_TASK_TYPES = TASK_TYPE_NAMES.filter((t) => (TASK_TYPES[t] as TaskTypeDef).waits === true);
export type DeployType = 'deploy' | 'redeploy' | 'rollback';

/** The Keyword search attributes every task's workflow carries (registered on the Temporal namespace). */
export const SEARCH_ATTRIBUTES = ['TeamId', 'ProjectId', 'EnvironmentId', 'TaskKind', 'TaskType', 'TaskId'] as const;

/** Activity event kinds (GET /teams/{id}/activity): task kinds, plus changes that are not tasks. */
export const ACTIVITY_KINDS = [...TASK_KINDS, 'access'] as const;
export type ActivityKind = (typeof ACTIVITY_KINDS)[number];
