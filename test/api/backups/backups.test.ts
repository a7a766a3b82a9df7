import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createDeployWorld, createEnvironment, waitForTask } from '../../helpers/deploy-fixtures';
import { PASSWORD, sessionAgent, insertHost } from '../../helpers/fixtures';
import type { Agent } from '../../helpers/http';
import { until } from '../../helpers/until';
import { dropServiceDatabase, serviceUrl } from '../../../host/pg-server';
import { serviceLogin } from '../../../activities/data/service-env';
import { startS3 } from '../../helpers/s3';
import { commitDatabaseApp, databaseApp } from '../../helpers/database-app';

/**
 * The data round trip through the real stack: a postgresql service, an app deployed with DATABASE_URL
 * writing rows through it, a backup to a local destination, the rows changed, a restore, the app reading
 * the original rows again; the download decrypting to a dump pg_restore reads; reset-database.
 */
const t = useTestContext({ worker: true, env: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' } });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let owner: Agent;
let destinationId: string;
const env = () => `/environments/${w.environment.id}`;

const app = (path: string) => databaseApp(w.environment.port, path);

async function runTask(agent: Agent, path: string, body: unknown) {
  const res = await agent.post(path, body);
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, owner, res.body.id, { timeoutMs: 90_000 });
  expect(task.status, task.error ?? '').toBe('succeeded');
  return task;
}

beforeAll(async () => {
  w = await createDeployWorld(t);
  commitDatabaseApp(w.repo.dir);
  owner = await sessionAgent(t, w.owner);
  // local destinations as the operator allows them (BACKUP_LOCAL_ROOTS): under the test run's directory
  t.deps.config.backupLocalRoots = [join(t.dataDir, '..')];
  const dir = join(t.dataDir, '..', `dest-${w.environment.id}`);
  mkdirSync(dir);
  destinationId = (
    await owner.post(`/teams/${w.team.id}/backup-destinations`, { kind: 'local', name: 'disk', path: dir })
  ).body.id;
  expect(destinationId).toBeTruthy();
  // A database service (test/api/services/ tests how it is made), and the app writing through it.
  await runTask(owner, `${env()}/services`, { kind: 'postgresql', plan: 'small' });
  await runTask(w.api, `${env()}/deploy`, {});
  expect(await app('/write?body=original')).toEqual({ status: 200, text: 'original' });
}, 180_000);

afterAll(async () => {
  const rows = await t.deps.knex('services').select('database_name', 'role_name');
  for (const r of rows) await dropServiceDatabase(t.config, { database: r.database_name, role: r.role_name });
});

describe('backups, restore and reset', () => {
  let snapshotId: string;

  it('POST /environments/{id}/backups takes an encrypted snapshot to the destination', async () => {
    expect((await owner.post(`${env()}/backups`, {})).body.error.fields).toHaveProperty('destination_id');
    const task = await runTask(owner, `${env()}/backups`, { destination_id: destinationId });
    expect(task).toMatchObject({ kind: 'backups', type: 'backup' });
    const list = await owner.get(`${env()}/backups`);
    expect(list.body.data).toHaveLength(1);
    snapshotId = list.body.data[0].id;
    expect(list.body.data[0]).toMatchObject({
      status: 'available',
      trigger: 'manual',
      contents: ['database', 'files'],
      destination_id: destinationId,
      task_id: task.id,
    });
    expect(list.body.data[0].size_bytes).toBeGreaterThan(0);
    const dest = await owner.get(`/backup-destinations/${destinationId}`);
    expect(dest.body).toMatchObject({ snapshots: 1, used_bytes: list.body.data[0].size_bytes });
  });

  it('restore is refused to a token, and over a protected environment without the password', async () => {
    await t.deps.knex('environments').where({ id: w.environment.id }).update({ protected: true });
    expect(await app('/write?body=changed')).toEqual({ status: 200, text: 'original,changed' });
    const byToken = await w.api.post(`${env()}/backups/${snapshotId}/restore`, {});
    expect(byToken.body.error.code).toBe('token_not_allowed');
    const noPassword = await owner.post(`${env()}/backups/${snapshotId}/restore`, {});
    expect(noPassword.status).toBe(403);
    expect(noPassword.body.error.code).toBe('reauthentication_required');
    // each refusal says what to send: a caller who only confirmed the password was refused again before
    expect(noPassword.body.error.message).toBe(
      'This environment is protected: send your password as `password` in the body with this change',
    );
    const wrong = await owner.post(`${env()}/backups/${snapshotId}/restore`, { password: 'not it at all' });
    expect(wrong.body.error.code).toBe('reauthentication_required');
    expect(wrong.body.error.message).toBe('That is not your password: repeat the change with your own as `password`');
    // the right password with a sign-in past the window: confirm it, then repeat
    const sessions = t.deps.knex('sessions').where({ user_id: w.owner.id });
    await sessions.clone().update({ authenticated_at: new Date(Date.now() - 2 * 3600_000) });
    const stale = await owner.post(`${env()}/backups/${snapshotId}/restore`, { password: PASSWORD });
    expect(stale.body.error).toMatchObject({
      code: 'reauthentication_required',
      message:
        'This change needs a sign-in of the last 60 minutes: confirm your password (POST /session/reauthenticate), then repeat the change with it',
    });
    await sessions.clone().update({ authenticated_at: new Date() });
    expect(Number((await t.deps.knex('tasks').where({ type: 'restore' }).count({ n: '*' }).first())?.n)).toBe(0);
  });

  it('restore puts the database back: the app reads the original rows again', async () => {
    const task = await runTask(owner, `${env()}/backups/${snapshotId}/restore`, { password: PASSWORD });
    expect(task).toMatchObject({ kind: 'backups', type: 'restore' });
    expect(await app('/')).toEqual({ status: 200, text: 'original' });
    // its phases: the web process restarted on the data put back, the old one stopped after the task
    const phases = await until(
      'the restore to record old_stopped',
      async () => (await owner.get(`/tasks/${task.id}`)).body.phases as { name: string }[],
      (list) => list.some((p) => p.name === 'old_stopped'),
      30_000,
    );
    expect(phases.map((p) => p.name)).toEqual([
      'queued',
      'started',
      'release_ready',
      'process_started',
      'healthy',
      'edge_switched',
      'old_stopped',
    ]);
  });

  it('a restore of a snapshot whose stored bytes changed fails, saying why and that the data is as it was', async () => {
    expect(await app('/write?body=after')).toEqual({ status: 200, text: 'original,after' });
    const row = await t.deps.knex('backups').where({ id: snapshotId }).first();
    const object = join(t.dataDir, '..', `dest-${w.environment.id}`, row.object_key);
    const stored = readFileSync(object);
    const changed = Buffer.from(stored);
    changed[changed.length - 1] ^= 0xff;
    writeFileSync(object, changed);
    try {
      const res = await owner.post(`${env()}/backups/${snapshotId}/restore`, { password: PASSWORD });
      expect(res.status, res.text).toBe(202);
      const task = await waitForTask(t, owner, res.body.id, { timeoutMs: 90_000 });
      expect(task.status).toBe('failed');
      // settled on the environment's host: nothing was swapped in
      expect(task.error).toMatch(/is not the snapshot that was stored \(its SHA-256 differs\)/);
      expect(task.error).toMatch(
        /; the environment's database and files are as they were before the restore \(nothing was changed\)$/,
      );
      expect(await app('/')).toEqual({ status: 200, text: 'original,after' });
    } finally {
      writeFileSync(object, stored);
      // the rows as the next tests expect them
      await app('/clear');
      expect(await app('/write?body=original')).toEqual({ status: 200, text: 'original' });
    }
  });

  it("sync copies production's database into another environment of the project", async () => {
    const staging = await createEnvironment(t, w.project, { name: 'staging' });
    const path = `/environments/${staging.id}`;
    expect((await owner.get(`${path}/sync`)).body.sources).toEqual([
      { environment_id: w.environment.id, name: w.environment.name },
    ]);
    await runTask(owner, `${path}/services`, { kind: 'postgresql', plan: 'nano' });
    const task = await runTask(owner, `${path}/sync`, { from_environment_id: w.environment.id, confirm: true });
    expect(task).toMatchObject({
      kind: 'backups',
      type: 'sync',
      result: { copied: expect.arrayContaining(['database']) },
    });
    const login = await serviceLogin(t.deps, staging.id);
    const c = new pg.Client({ connectionString: serviceUrl(t.config, login!) });
    await c.connect();
    expect((await c.query('SELECT body FROM notes ORDER BY id')).rows).toEqual([{ body: 'original' }]);
    await c.end();
    // Deleting the environment drops its database and role.
    expect((await owner.delete(path)).status).toBe(204);
    expect((await t.deps.knex.raw('SELECT 1 FROM pg_database WHERE datname = ?', [login!.database])).rowCount).toBe(0);
  });

  it('the downloaded snapshot decrypts to a dump that pg_restore --list reads', async () => {
    const link = await owner.post(`${env()}/backups/${snapshotId}/download`, {});
    const file = join(t.dataDir, 'download.vcb');
    writeFileSync(file, Buffer.from(await (await fetch(link.body.url)).arrayBuffer()));
    const key = (await owner.post(`${env()}/backup-key`, {})).body.key;
    execFileSync('node', ['scripts/decrypt-backup.mjs', '--key', key, '--in', file, '--out', join(t.dataDir, 'plain')]);
    expect(execFileSync('pg_restore', ['--list', join(t.dataDir, 'plain', 'database.dump')]).toString()).toMatch(
      /TABLE DATA public notes/,
    );
  });

  it('reset-database needs the name in confirm, then leaves the database empty', async () => {
    const refused = await owner.post(`${env()}/reset-database`, { confirm: 'nope', password: PASSWORD });
    expect(refused.status).toBe(422);
    expect(refused.body.error.fields).toHaveProperty('confirm');
    expect(await app('/')).toEqual({ status: 200, text: 'original' });
    await runTask(owner, `${env()}/reset-database`, { confirm: w.environment.name, password: PASSWORD });
    expect((await app('/')).text).toMatch(/relation "notes" does not exist/);
  });

  it('sync needs confirm true', async () => {
    const res = await owner.post(`${env()}/sync`, { from_environment_id: w.environment.id });
    expect(res.status).toBe(422);
    expect(res.body.error.fields).toHaveProperty('confirm');
  });

  it('sync from an environment with a database into one without is 422 on from_environment_id and starts nothing', async () => {
    const bare = await createEnvironment(t, w.project, { name: 'bare' });
    const res = await owner.post(`/environments/${bare.id}/sync`, {
      from_environment_id: w.environment.id,
      confirm: true,
    });
    expect(res.status, res.text).toBe(422);
    expect(res.body.error.fields.from_environment_id).toBe(
      'has a database and bare has none: add a PostgreSQL service to bare first',
    );
    expect(await t.deps.knex('tasks').where({ environment_id: bare.id })).toEqual([]);
  });
});

describe('the backup window schedule', () => {
  it('a run takes a scheduled backup of every environment with data and deletes snapshots past the retention', async () => {
    const set = await owner.post(`/projects/${w.project.id}/backup-window`, {
      hour_utc: 4,
      retention_days: 2,
      destination_id: destinationId,
    });
    expect(set.status).toBe(200);
    const [old] = await t.deps
      .knex('backups')
      .insert({
        team_id: w.team.id,
        project_id: w.project.id,
        environment_id: w.environment.id,
        destination_id: destinationId,
        status: 'available',
        trigger: 'scheduled',
        contents: JSON.stringify(['files']),
        object_key: `${w.environment.id}/old.vcb`,
        size_bytes: 1,
        key_fingerprint: 'x',
        created_at: new Date(Date.now() - 5 * 86_400_000),
      })
      .returning('id');
    await t.deps.temporal.schedule.getHandle(`backups-${w.project.id}`).trigger();
    const deadline = Date.now() + 60_000;
    let list: Array<{ id: string; trigger: string; status: string }> = [];
    while (Date.now() < deadline) {
      list = (await owner.get(`${env()}/backups`)).body.data;
      if (list.some((b) => b.trigger === 'scheduled' && b.status === 'available') && !list.some((b) => b.id === old.id))
        break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(list.filter((b) => b.trigger === 'scheduled').map((b) => b.status)).toEqual(['available']);
    expect(list.some((b) => b.id === old.id)).toBe(false);
    const task = await t.deps.knex('tasks').where({ type: 'backup', account_via: 'schedule' }).first();
    expect(task).toBeTruthy();
    await owner.delete(`/projects/${w.project.id}/backup-window`);
  });

  it('starts no snapshot to the local destination of an environment on another host; the refusal shows in its backups', async () => {
    // an environment placed on another host (a host row, as its agent registers it), whose volume's last sample
    // (written by that host's sampler) holds files: a local destination is on this machine, so nothing starts
    await insertHost(t, 'backups-away');
    const made = await owner.post(`/projects/${w.project.id}/environments`, { name: 'away', git_ref: 'main' });
    expect(made.status, made.text).toBe(201);
    const away = made.body.id as string;
    await t.deps.knex('servers').where({ environment_id: away, role: 'web' }).update({ host: 'backups-away' });
    await t.deps
      .knex('resource_samples')
      .insert({ environment_id: away, at: new Date(), cpu: 0, memory_bytes: 0, disk_bytes: 9000, volume_bytes: 5000 });
    const set = await owner.post(`/projects/${w.project.id}/backup-window`, {
      hour_utc: 4,
      retention_days: 2,
      destination_id: destinationId,
    });
    expect(set.status, set.text).toBe(200);
    await t.deps.temporal.schedule.getHandle(`backups-${w.project.id}`).trigger();
    const refused = await until('the scheduled snapshot of the environment on another host, refused', async () => {
      const list = (await owner.get(`/environments/${away}/backups`)).body.data as Array<Record<string, unknown>>;
      return list.find((b) => b.trigger === 'scheduled');
    });
    expect(refused.status).toBe('failed');
    expect(String(refused.error)).toContain('"disk"');
    expect(String(refused.error)).toContain('Use an s3 destination');
    expect(String(refused.error)).not.toContain('backups-away');
    expect(await t.deps.knex('tasks').where({ environment_id: away, type: 'backup' })).toEqual([]);
    await owner.delete(`/projects/${w.project.id}/backup-window`);
  });
});

describe('a destination that stops answering', () => {
  it('fails the backup with a clear message and leaves the earlier snapshots as they were', async () => {
    const s3 = await startS3();
    try {
      const dest = await owner.post(`/teams/${w.team.id}/backup-destinations`, {
        kind: 's3',
        name: 'flaky',
        endpoint: s3.endpoint,
        region: 'us-east-1',
        bucket: 'backups',
        access_key_id: s3.accessKeyId,
        secret_access_key: s3.secretAccessKey,
      });
      expect(dest.status).toBe(201);
      await runTask(owner, `${env()}/backups`, { destination_id: dest.body.id });
      await s3.stop();
      const res = await owner.post(`${env()}/backups`, { destination_id: dest.body.id });
      const task = await waitForTask(t, owner, res.body.id, { timeoutMs: 90_000 });
      expect(task.status).toBe('failed');
      expect(task.error).toMatch(/the snapshot could not be taken/);
      const atFlaky = (await owner.get(`${env()}/backups`)).body.data.filter(
        (b: { destination_id: string }) => b.destination_id === dest.body.id,
      );
      expect(atFlaky.map((b: { status: string }) => b.status).sort()).toEqual(['available', 'failed']);
      expect((await owner.get(`/backup-destinations/${dest.body.id}`)).body.snapshots).toBe(1);
    } finally {
      await s3.stop();
    }
  });
});
