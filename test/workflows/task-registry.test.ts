/**
 * The task registry (db/vocabulary.ts's TASK_TYPES with db/task-params.ts's schemas; STYLE 16): every type of
 * CONTRACT "Tasks of every kind" has its workflow, its params' schema, its kind and its console label, and each
 * workflow is started by the name it is registered under.
 */
import { describe, expect, it } from 'vitest';
import * as workflows from '../../workflows';
import { TASK_PARAMS } from '../../db/task-params';
import { TASK_TYPES, type TaskType } from '../../db/vocabulary';
import type { TaskSpec } from '../../core/tasks';

/** CONTRACT "Tasks of every kind", as it stands. */
const CONTRACT_TASKS = {
  deployments: ['deploy', 'redeploy', 'rollback', 'build'],
  configuration: ['apply_variables', 'cdn_clear', 'certificate_issue', 'certificate_renew'],
  maintenance: ['maintenance_on', 'maintenance_off'],
  backups: ['backup', 'restore', 'sync', 'reset_database', 'verify'],
  machines: [
    'service_create',
    'resize',
    'reboot',
    'scale',
    'reshape',
    'discard_old_database',
    'storage_move',
    'storage_discard',
    'volume_grow',
    'move',
  ],
};

/** Types of the table being built on other branches (many hosts, point-in-time recovery): none may stay here. */
const KNOWN_MISSING: string[] = [];

const registered = (type: string): type is TaskType => Object.hasOwn(TASK_TYPES, type);

describe('the task registry', () => {
  for (const [kind, types] of Object.entries(CONTRACT_TASKS)) {
    for (const type of types.filter((t) => !KNOWN_MISSING.includes(t))) {
      it(`${kind}/${type} has its kind, workflow, params' schema and console label`, () => {
        expect(registered(type), `${type} is not in TASK_TYPES`).toBe(true);
        if (!registered(type)) return;
        const def = TASK_TYPES[type];
        expect(def.kind).toBe(kind);
        expect(typeof (workflows as Record<string, unknown>)[def.workflow]).toBe('function');
        expect(TASK_PARAMS[type]).toBeDefined();
        expect(def.label.trim()).not.toBe('');
      });
    }
  }

  it('lists as known missing only types that still have no entry', () => {
    expect(KNOWN_MISSING.filter(registered)).toEqual([]);
  });

  it('has no type the table does not name', () => {
    const named = new Set(Object.values(CONTRACT_TASKS).flat());
    expect(Object.keys(TASK_TYPES).filter((t) => !named.has(t))).toEqual([]);
  });

  it('names each workflow as its function is named (Temporal registers and starts it by that name)', () => {
    for (const def of Object.values(TASK_TYPES)) {
      const fn = (workflows as Record<string, unknown>)[def.workflow] as { name?: string } | undefined;
      expect(fn?.name, def.workflow).toBe(def.workflow);
    }
    for (const [name, fn] of Object.entries(workflows)) expect((fn as { name: string }).name, name).toBe(name);
  });

  it('parses the params each type is started with, and refuses what its workflow could not read', () => {
    expect(
      TASK_PARAMS.resize.parse({
        server_id: 's',
        server_name: 'web',
        from_plan: 'a',
        plan: 'b',
        cpu: 1,
        memory_mb: 512,
        disk_gb: 10,
      }),
    ).toMatchObject({ plan: 'b' });
    expect(TASK_PARAMS.backup.safeParse({ backup_id: 'b', trigger: 'manual' }).success).toBe(false);
    expect(TASK_PARAMS.restore.safeParse({}).success).toBe(false);
  });
});

/** Compiled, never run: `npm run typecheck` fails when a start with a wrong param stops being a type error. */
function wrongParamsAreTypeErrors(spec: Omit<TaskSpec<'resize'>, 'params' | 'type'>) {
  const server = { server_id: 's', server_name: 'web' };
  const ok: TaskSpec<'reboot'> = { ...spec, type: 'reboot', params: server };
  // @ts-expect-error a resize's params name its plan
  const missing: TaskSpec<'resize'> = { ...spec, type: 'resize', params: server };
  const backup = { backup_id: 'b', destination_id: 'd', trigger: 'now' } as const;
  // @ts-expect-error a backup's trigger is manual or scheduled
  const wrong: TaskSpec<'backup'> = { ...spec, type: 'backup', params: backup };
  const ref = { git_ref: 'main', skip_steps: false };
  // @ts-expect-error a deploy is started with its workflow's input (environment, project, ...)
  const noInput: TaskSpec<'deploy'> = { ...spec, type: 'deploy', params: ref };
  return [ok, missing, wrong, noInput];
}
void wrongParamsAreTypeErrors;
