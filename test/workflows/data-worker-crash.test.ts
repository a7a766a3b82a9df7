import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { killAndWait, spawnSystemProcess, stopChildren } from '../helpers/processes';
import { createEnvironment, getTask, taskLog, waitForTask } from '../helpers/deploy-fixtures';
import { createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import type { Agent } from '../helpers/http';
import { dropServiceDatabase, serviceUrl, withAdmin, type ServiceLogin } from '../../host/pg-server';
import { serviceLogin } from '../../activities/data/service-env';
import { listLocal } from '../../host/destinations';
import { environmentVolume } from '../../db/queries/storage';
import { until } from '../helpers/until';
import { atRealHeartbeatTimeouts, scheduledHeartbeatTimeouts, SHORT_HEARTBEAT_ENV } from '../helpers/heartbeats';

/**
 * A worker killed with SIGKILL in the middle of a backup and of a restore (the worker runs as its own process,
 * as in production): Temporal notices through the missed heartbeats and runs the activity again on a new
 * worker. The backup ends available with a complete object and no partial one; the restore never shows a half
 * restored database: while the worker is dead the live database is the previous one, afterwards the snapshot's.
 * The backup's kill is noticed within a shortened heartbeat timeout (ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS); the
 * restore's runs at the real value (the `long` profile's 15 s).
 */
const t = useTestContext({ env: SHORT_HEARTBEAT_ENV });
const children: ChildProcess[] = [];
let owner: Agent;
let envId: string;
let destDir: string;
let login: ServiceLogin;
let volume: string;
const ROWS = 120_000; // ~60 MB of hex text: a dump and a restore take seconds here

function startWorker(): ChildProcess {
  const child = spawnSystemProcess(t, 'processes/worker.ts');
  children.push(child);
  return child;
}

/** A query as the service's own role, on a connection of its own (a restore's swap ends every session). */
async function q(sql: string) {
  const c = new pg.Client({ connectionString: serviceUrl(t.config, login) });
  await c.connect();
  try {
    return (await c.query(sql)).rows;
  } finally {
    await c.end();
  }
}
const count = async (sql: string) => Number((await q(sql))[0].n);
const databases = async () =>
  withAdmin(t.config, async (c) =>
    (await c.query('SELECT datname FROM pg_database')).rows.map((r: { datname: string }) => r.datname),
  );

beforeAll(async () => {
  const user = await createUser(t);
  const team = await createTeam(t, user);
  const project = await createProject(t, team);
  envId = (await createEnvironment(t, project, { name: 'staging' })).id;
  owner = await sessionAgent(t, user);
  // local destinations as the operator allows them (BACKUP_LOCAL_ROOTS): under the test run's directory
  t.deps.config.backupLocalRoots = [join(t.dataDir, '..')];
  destDir = join(t.dataDir, '..', `dest-crash-${envId}`);
  mkdirSync(destDir);
  const dest = await owner.post(`/teams/${team.id}/backup-destinations`, {
    kind: 'local',
    name: 'disk',
    path: destDir,
  });
  expect(dest.status, dest.text).toBe(201);

  startWorker();
  const created = await owner.post(`/environments/${envId}/services`, { kind: 'postgresql', plan: 'small' });
  expect(created.status, created.text).toBe(202);
  const task = await waitForTask(t, owner, created.body.id, { timeoutMs: 90_000 });
  expect(task.status, task.error ?? '').toBe('succeeded');

  login = (await serviceLogin(t.deps, envId))!;
  await q(`CREATE TABLE big AS SELECT g AS id,
    (SELECT string_agg(md5(random()::text || g::text || i::text), '') FROM generate_series(1, 16) i) AS body
    FROM generate_series(1, ${ROWS}) g`);
  await q("CREATE TABLE notes (body text); INSERT INTO notes VALUES ('in the snapshot')");
  volume = await environmentVolume(t.deps.knex, t.config.storageRoots, envId);
  mkdirSync(volume, { recursive: true });
  writeFileSync(join(volume, 'upload.txt'), 'in the snapshot');
}, 180_000);

afterAll(async () => {
  await stopChildren(children);
  const rows = await t.deps.knex('services').select('database_name', 'role_name');
  for (const r of rows) await dropServiceDatabase(t.config, { database: r.database_name, role: r.role_name });
});

describe('a worker killed with SIGKILL', () => {
  let snapshotId: string;

  it('during a backup: the new worker takes it again; the snapshot is complete and no partial object stays', async () => {
    const res = await owner.post(`/environments/${envId}/backups`, { destination_id: await destinationId() });
    expect(res.status, res.text).toBe(202);
    // Mid-way: the encrypted object is being written (a `.partial` file with data in it).
    await until(
      'a partial object',
      async () => {
        const files = await listLocal(destDir);
        return files.some((f) => f.endsWith('.partial')) ? files : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    await killAndWait(children.at(-1)!, 'SIGKILL');

    // While no worker runs, the snapshot is listed as running, never available; the task is still running.
    const during = (await owner.get(`/environments/${envId}/backups`)).body.data;
    expect(during.map((b: { status: string }) => b.status)).toEqual(['running']);
    expect((await getTask(t, owner, res.body.id)).status).toBe('running');

    startWorker();
    const done = await waitForTask(t, owner, res.body.id, { timeoutMs: 120_000 });
    expect(done.status, done.error ?? '').toBe('succeeded');
    const list = (await owner.get(`/environments/${envId}/backups`)).body.data;
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ status: 'available', task_id: res.body.id, contents: ['database', 'files'] });
    snapshotId = list[0].id;
    // Exactly one object, complete: its size is the recorded one; the killed attempt's partial is gone.
    expect(await listLocal(destDir)).toEqual([`${envId}/${snapshotId}.vcb`]);
    expect(statSync(join(destDir, envId, `${snapshotId}.vcb`)).size).toBe(list[0].size_bytes);
    // its copying activities ran with the file's shortened heartbeat timeout
    const timeouts = await scheduledHeartbeatTimeouts(t, res.body.id);
    expect(timeouts).toContain(4);
    expect(timeouts).not.toContain(15);
  });

  describe('at the real heartbeat timeout', () => {
    atRealHeartbeatTimeouts(t);
    it('during a restore: the live database stays the previous one until the new worker puts the snapshot back whole', async () => {
      await q("DELETE FROM big WHERE id % 2 = 0; UPDATE notes SET body = 'changed after'");
      writeFileSync(join(volume, 'upload.txt'), 'changed after');
      const staging = `${login.database}_restore`;

      const res = await owner.post(`/environments/${envId}/backups/${snapshotId}/restore`, {});
      expect(res.status, res.text).toBe(202);
      // Mid-way: pg_restore is filling the staging copy.
      await until(
        'the staging database being filled',
        async () =>
          withAdmin(t.config, async (c) => {
            const r = await c.query(
              "SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND application_name = 'pg_restore' AND query ILIKE 'COPY%'",
              [staging],
            );
            return (r.rowCount ?? 0) > 0;
          }),
        { timeoutMs: 60_000, intervalMs: 50 },
      );
      await killAndWait(children.at(-1)!, 'SIGKILL');

      // Half restored only in the staging copy: the live database and files are wholly the previous ones.
      expect(await databases()).toContain(staging);
      expect(await count('SELECT count(*) AS n FROM big')).toBe(ROWS / 2);
      expect(await q('SELECT body FROM notes')).toEqual([{ body: 'changed after' }]);
      expect(readFileSync(join(volume, 'upload.txt'), 'utf8')).toBe('changed after');
      expect((await getTask(t, owner, res.body.id)).status).toBe('running');

      startWorker();
      const done = await waitForTask(t, owner, res.body.id, { timeoutMs: 120_000 });
      expect(done.status, done.error ?? '').toBe('succeeded');
      expect(done.result).toMatchObject({ backup_id: snapshotId, restored: ['database', 'files'] });
      expect(await taskLog(t, owner, res.body.id)).toMatch(/Put back: database and files/);

      // Wholly the snapshot's now; no staging copy of either part remains.
      expect(await count('SELECT count(*) AS n FROM big')).toBe(ROWS);
      expect(await q('SELECT body FROM notes')).toEqual([{ body: 'in the snapshot' }]);
      expect(readFileSync(join(volume, 'upload.txt'), 'utf8')).toBe('in the snapshot');
      expect(await databases()).not.toContain(staging);
      expect(existsSync(`${volume}.restore`)).toBe(false);
      // its copying activities ran with the real heartbeat timeout (the `long` profile's)
      const timeouts = await scheduledHeartbeatTimeouts(t, res.body.id);
      expect(timeouts).toContain(15);
      expect(timeouts).not.toContain(4);
    });
  });
});

async function destinationId(): Promise<string> {
  const row = await t.deps.knex('backup_destinations').first('id');
  return row.id;
}
