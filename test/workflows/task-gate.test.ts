/**
 * db/queries/task-gate.ts: a task kept apart from another starts once that one has ended, and its started_at is
 * never before the blocker's finished_at. CI once saw an apply_variables that had waited for a storage move
 * start 4 ms "before" the move finished: its started_at was the gate transaction's now() (when the transaction
 * began), and the move finished between that and the moment the gate looked.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { createProject, createTeam, createUser } from '../helpers/fixtures';
import { type GateBlocker, startTaskGated } from '../../db/queries/task-gate';
import { insertTask } from '../../db/queries/tasks';
import type { TaskType } from '../../db/vocabulary';

const t = useTestContext();
let env: { id: string; team_id: string; project_id: string };

async function task(type: TaskType, status: 'pending' | 'running') {
  const id = randomUUID();
  await insertTask(t.deps.knex, {
    id,
    team_id: env.team_id,
    project_id: env.project_id,
    environment_id: env.id,
    kind: 'configuration',
    type,
    account_user_id: null,
    account_via: 'session',
    workflow_id: `task-gate-${id}`,
    params: {},
    created_at: new Date().toISOString(),
  });
  if (status === 'running')
    await t.deps.knex('tasks').where({ id }).update({ status: 'running', started_at: t.deps.knex.fn.now() });
  return id;
}

beforeAll(async () => {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  const project = await createProject(t, team);
  env = await createEnvironment(t, project);
});

describe('startTaskGated', () => {
  it('keeps a waiting task pending while an exclusive one runs, and names it', async () => {
    const move = await task('storage_move', 'running');
    const apply = await task('apply_variables', 'pending');
    const started = await startTaskGated(t.deps.knex, apply, async () => true);
    expect(started).toEqual({ waiting: expect.objectContaining({ id: move, type: 'storage_move' }) });
    expect((await t.deps.knex('tasks').where({ id: apply }).first()).status).toBe('pending');
    await t.deps.knex('tasks').whereIn('id', [move, apply]).update({ status: 'succeeded', finished_at: new Date() });
  });

  it('a task started as its blocker ends has started_at at or after the blocker finished_at', async () => {
    const move = await task('storage_move', 'running');
    const apply = await task('apply_variables', 'pending');
    // The blocker ends while the gate transaction looks at it (on another connection, as the move's workflow
    // would), and its workflow is then no longer open.
    const endsNow = async (b: GateBlocker) => {
      await t.deps.knex('tasks').where({ id: b.id }).update({ status: 'succeeded', finished_at: t.deps.knex.fn.now() });
      return false;
    };
    expect(await startTaskGated(t.deps.knex, apply, endsNow)).toBe(true);
    const { ordered } = (
      await t.deps.knex.raw(
        `SELECT a.started_at >= m.finished_at AS ordered FROM tasks a, tasks m WHERE a.id = ? AND m.id = ?`,
        [apply, move],
      )
    ).rows[0];
    expect(ordered).toBe(true);
    expect((await t.deps.knex('tasks').where({ id: apply }).first()).status).toBe('running');
  });
});
