import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { commitDatabaseApp, databaseApp } from '../../helpers/database-app';
import { createDeployWorld, createEnvironment, runTaskOk } from '../../helpers/deploy-fixtures';
import { createProject, PASSWORD, sessionAgent } from '../../helpers/fixtures';
import type { Agent } from '../../helpers/http';
import { dropServiceDatabase } from '../../../host/pg-server';
import { createEnvironmentMachines } from '../../../api/machines/service';

/**
 * Issue 16, item 9 (CONTRACT "Running"): deleting a protected environment needs a recent sign-in and its name as
 * `confirm`; the deletion is an activity event; its tasks, activity and snapshots are kept 30 days, listed by
 * GET /projects/{id}/deleted-environments, and such a snapshot restores into another environment of the project
 * (a real backup of a real database on a real local destination, decrypted with the key the tombstone kept).
 * The daily prune removes them once the 30 days are over (the clock moved through the data: deleted_at set back).
 */
const t = useTestContext({ worker: true });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let owner: Agent;
let staging: { id: string; port: number; name: string };
let destinationDir: string;
let destinationId: string;
let snapshot: { id: string; task_id: string; object_key?: string };
const production = () => w.environment;

const runTask = (path: string, body: unknown = {}) => runTaskOk(t, owner, path, body, 150_000);

/** The owner's sign-in, `minutes` old. */
async function signInAge(minutes: number) {
  await t.deps
    .knex('sessions')
    .where({ user_id: w.owner.id })
    .update({ authenticated_at: new Date(Date.now() - minutes * 60_000) });
}

async function prune() {
  return (await t.deps.temporal.workflow.execute('pruneExpiredRecords', {
    taskQueue: t.config.taskQueue,
    workflowId: `prune-${crypto.randomUUID()}`,
    args: [{}],
  })) as { deletedEnvironments: number; snapshotObjects: number };
}

beforeAll(async () => {
  w = await createDeployWorld(t);
  await t.deps.knex('environments').where({ id: production().id }).update({ protected: true });
  staging = await createEnvironment(t, w.project, { name: 'staging' });
  for (const e of [production(), staging]) {
    await t.deps.knex.transaction((trx) => createEnvironmentMachines(trx, t.deps, e as never));
  }
  commitDatabaseApp(w.repo.dir);
  owner = await sessionAgent(t, w.owner);
  // local destinations as the operator allows them (BACKUP_LOCAL_ROOTS): under the test run's directory
  t.deps.config.backupLocalRoots = [join(t.dataDir, '..')];
  destinationDir = join(t.dataDir, '..', `dest-${production().id}`);
  mkdirSync(destinationDir);
  const dest = await owner.post(`/teams/${w.team.id}/backup-destinations`, {
    kind: 'local',
    name: 'disk',
    path: destinationDir,
  });
  expect(dest.status, dest.text).toBe(201);
  destinationId = dest.body.id;

  for (const e of [production(), staging]) {
    await runTask(`/environments/${e.id}/services`, { kind: 'postgresql', plan: 'small' });
    await runTask(`/environments/${e.id}/deploy`);
  }
  expect(await databaseApp(production().port, '/write?body=from%20production')).toEqual({
    status: 200,
    text: 'from production',
  });
  expect(await databaseApp(staging.port, '/write?body=from%20staging')).toEqual({ status: 200, text: 'from staging' });
  const backup = await runTask(`/environments/${production().id}/backups`, { destination_id: destinationId });
  const [row] = await t.deps.knex('backups').where({ task_id: backup.id });
  snapshot = { id: row.id, task_id: backup.id, object_key: row.object_key };
  expect(row.status).toBe('available');
}, 400_000);

afterAll(async () => {
  const rows = await t.deps.knex('services').select('database_name', 'role_name');
  for (const r of rows) await dropServiceDatabase(t.config, { database: r.database_name, role: r.role_name });
});

describe('DELETE /environments/{id} of a protected environment', () => {
  it('with a sign-in 25 minutes old answers 403 reauthentication_required and deletes nothing', async () => {
    await signInAge(25);
    const res = await owner.delete(`/environments/${production().id}`, { confirm: production().name });
    expect(res.status, res.text).toBe(403);
    expect(res.body.error.code).toBe('reauthentication_required');
    expect(await t.deps.knex('environments').where({ id: production().id }).first()).toBeTruthy();
    expect(await databaseApp(production().port, '/')).toEqual({ status: 200, text: 'from production' });
  });

  it('without its name as confirm, or with another, answers 422 on confirm and deletes nothing', async () => {
    expect((await owner.post('/session/reauthenticate', { password: PASSWORD })).status).toBe(200);
    for (const body of [undefined, {}, { confirm: 'staging' }, { confirm: 'Production' }]) {
      const res = await owner.delete(`/environments/${production().id}`, body);
      expect(res.status, res.text).toBe(422);
      expect(res.body.error.fields).toHaveProperty('confirm');
    }
    expect(await t.deps.knex('environments').where({ id: production().id }).first()).toBeTruthy();
    expect((await owner.get(`/projects/${w.project.id}/deleted-environments`)).body).toEqual({ data: [] });
  });

  it('after a re-authentication, with confirm: 204, an activity event, its tasks and snapshots kept and listed', async () => {
    const id = production().id;
    const tasksBefore = (await owner.get(`/tasks?environment=${id}&limit=100`)).body.data.map(
      (x: { id: string }) => x.id,
    );
    expect(tasksBefore).toContain(snapshot.task_id);
    const res = await owner.delete(`/environments/${id}`, { confirm: 'production' });
    expect(res.status, res.text).toBe(204);
    expect(await t.deps.knex('environments').where({ id }).first()).toBeUndefined();

    const events = await owner.get(`/teams/${w.team.id}/activity?type=environment_deleted`);
    expect(events.body.data).toEqual([
      expect.objectContaining({
        kind: 'configuration',
        type: 'environment_deleted',
        project_id: w.project.id,
        environment_id: id,
        actor: expect.objectContaining({ id: w.owner.id, via: 'session' }),
      }),
    ]);
    expect(events.body.data[0].summary).toContain('production');

    // its tasks: each still readable, and the environment's activity still lists them
    const task = await owner.get(`/tasks/${snapshot.task_id}`);
    expect(task.status).toBe(200);
    expect(task.body).toMatchObject({ environment_id: id, type: 'backup', status: 'succeeded' });
    const tasksAfter = (await owner.get(`/tasks?environment=${id}&limit=100`)).body.data.map(
      (x: { id: string }) => x.id,
    );
    expect(tasksAfter).toEqual(tasksBefore);
    const activity = await owner.get(`/teams/${w.team.id}/activity?environment=${id}&limit=100`);
    expect(activity.body.data.map((e: { type: string }) => e.type)).toEqual(
      expect.arrayContaining(['environment_deleted', 'backup', 'deploy', 'service_create']),
    );
    expect(activity.body.data.find((e: { type: string }) => e.type === 'backup').summary).toContain('production');

    const listed = await owner.get(`/projects/${w.project.id}/deleted-environments`);
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([
      expect.objectContaining({
        id,
        name: 'production',
        protected: true,
        snapshots: [expect.objectContaining({ id: snapshot.id, status: 'available', destination_id: destinationId })],
      }),
    ]);
    // kept with its backup key
    const kept = await t.deps.knex('deleted_environments').where({ id }).first();
    expect(kept.backup_key_sealed).toMatch(/^v1\./);
    expect(existsSync(join(destinationDir, snapshot.object_key!))).toBe(true);
  });
});

describe('POST /environments/{target}/backups/{snapshot}/restore of a deleted environment', () => {
  it('is 404 from an environment of another project', async () => {
    const other = await createProject(t, w.team, { repository_url: w.repo.dir });
    const outsider = await createEnvironment(t, other, { name: 'outsider' });
    const res = await owner.post(`/environments/${outsider.id}/backups/${snapshot.id}/restore`, {});
    expect(res.status).toBe(404);
    expect(await t.deps.knex('tasks').where({ environment_id: outsider.id }).first()).toBeUndefined();
  });

  it('puts its database into another environment of the project', async () => {
    const task = await runTask(`/environments/${staging.id}/backups/${snapshot.id}/restore`);
    expect(task).toMatchObject({ type: 'restore', environment_id: staging.id });
    expect(await databaseApp(staging.port, '/')).toEqual({ status: 200, text: 'from production' });
  });
});

describe('the daily prune', () => {
  it('keeps a deleted environment 30 days, then removes its tasks, activity, snapshots (their objects too)', async () => {
    const id = production().id;
    await t.deps
      .knex('deleted_environments')
      .where({ id })
      .update({ deleted_at: new Date(Date.now() - 29 * 86_400_000) });
    expect((await prune()).deletedEnvironments).toBe(0);
    expect((await owner.get(`/projects/${w.project.id}/deleted-environments`)).body.data).toHaveLength(1);

    // copies of its volume and of a sync's files that a failing store left behind (store-copies.ts)
    const leftovers = ['moves', 'syncs'].map((kind) => join(t.config.releaseStore.location, kind, id));
    for (const dir of leftovers) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'task.vcb'), 'left behind');
    }
    await t.deps
      .knex('deleted_environments')
      .where({ id })
      .update({ deleted_at: new Date(Date.now() - 31 * 86_400_000) });
    expect((await prune()).deletedEnvironments).toBe(1);
    expect(leftovers.filter((dir) => existsSync(dir))).toEqual([]);
    expect((await owner.get(`/projects/${w.project.id}/deleted-environments`)).body).toEqual({ data: [] });
    expect((await owner.get(`/tasks/${snapshot.task_id}`)).status).toBe(404);
    expect(await t.deps.knex('tasks').where({ environment_id: id }).first()).toBeUndefined();
    expect(await t.deps.knex('backups').where({ environment_id: id }).first()).toBeUndefined();
    expect(await t.deps.knex('activity_events').where({ environment_id: id }).first()).toBeUndefined();
    expect(await t.deps.knex('deleted_environments').where({ id }).first()).toBeUndefined();
    expect(existsSync(join(destinationDir, snapshot.object_key!))).toBe(false);
    // the other environment, and what it restored, stay
    expect(await databaseApp(staging.port, '/')).toEqual({ status: 200, text: 'from production' });
  });
});

describe('DELETE /projects/{id} after its environments were deleted', () => {
  it("queues its deleted environments' snapshot objects, which the daily prune deletes from their destination", async () => {
    const backup = await runTask(`/environments/${staging.id}/backups`, { destination_id: destinationId });
    const row = await t.deps.knex('backups').where({ task_id: backup.id }).first();
    expect(row.status).toBe('available');
    const file = join(destinationDir, row.object_key);
    expect(existsSync(file)).toBe(true);

    expect((await owner.delete(`/environments/${staging.id}`, { confirm: 'staging' })).status).toBe(204);
    const deleted = await owner.delete(`/projects/${w.project.id}`);
    expect(deleted.status, deleted.text).toBe(204);
    // the rows went with the project; the object waits for the prune, queued with its destination
    expect(await t.deps.knex('backups').where({ id: row.id }).first()).toBeUndefined();
    expect(await t.deps.knex('snapshot_object_deletions').select('destination_id', 'object_key')).toEqual([
      { destination_id: destinationId, object_key: row.object_key },
    ]);
    expect(existsSync(file)).toBe(true);

    expect((await prune()).snapshotObjects).toBe(1);
    expect(existsSync(file)).toBe(false);
    expect(await t.deps.knex('snapshot_object_deletions').first()).toBeUndefined();
    // the destination itself is the team's and stays
    expect((await owner.get(`/teams/${w.team.id}/backup-destinations`)).body.data).toEqual([
      expect.objectContaining({ id: destinationId }),
    ]);
  });
});
