import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { makeStorageRoots } from '../../helpers/storage-roots';
import { commitDatabaseApp, databaseApp } from '../../helpers/database-app';
import { createDeployWorld, taskLog, runTaskOk } from '../../helpers/deploy-fixtures';
import { sessionAgent } from '../../helpers/fixtures';
import type { Agent } from '../../helpers/http';
import { dropServiceDatabase, servicesAdminUrl } from '../../../host/pg-server';
import { tenantUid } from '../../../host/provider/sandbox';
import { hostTaskQueue } from '../../../system/task-queues';

/**
 * The environment's disks through the real stack: an app deployed in its sandbox writes into VC_VOLUME_PATH
 * and into its database; the files survive a redeploy; each disk moves to the second root of STORAGE_ROOTS
 * (a task: the web process stopped, the data copied and verified, switched, started) and the app reads the
 * same files and rows; the old copies stay until discard and are gone after it.
 */
const t = useTestContext({ worker: true });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let owner: Agent;
let roots: [string, string];
const env = () => `/environments/${w.environment.id}`;
const volumeAt = (root: string) => join(root, 'volumes', w.environment.id);

const APP = `
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const psql = (sql) => execFileSync('psql', [process.env.DATABASE_URL, '-Atc', sql], { encoding: 'utf8' }).trim();
const vol = process.env.VC_VOLUME_PATH;
http.createServer((req, res) => {
  const u = new URL(req.url, 'http://x');
  try {
    if (u.pathname === '/healthz') return res.end('ok');
    if (u.pathname === '/where') return res.end(String(vol));
    if (u.pathname === '/put') { fs.writeFileSync(path.join(vol, u.searchParams.get('name')), u.searchParams.get('body')); return res.end('stored'); }
    if (u.pathname === '/get') return res.end(fs.readFileSync(path.join(vol, u.searchParams.get('name')), 'utf8'));
    if (u.pathname === '/write') psql("INSERT INTO notes (body) VALUES ('" + u.searchParams.get('body') + "')");
    res.end(psql('SELECT string_agg(body, \\',\\' ORDER BY id) FROM notes'));
  } catch (e) { res.writeHead(500); res.end(String(e.stderr || e.message)); }
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

const app = (p: string) => databaseApp(w.environment.port, p);

const runTask = (p: string, body: unknown = {}) => runTaskOk(t, owner, p, body, 120_000);

const admin = () => new pg.Client({ connectionString: servicesAdminUrl(t.config) });
async function adminQuery(sql: string, params: unknown[] = []) {
  const c = admin();
  await c.connect();
  try {
    return (await c.query(sql, params)).rows;
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  roots = makeStorageRoots(t);
  w = await createDeployWorld(t);
  commitDatabaseApp(w.repo.dir, {
    server: APP,
    deployFirst: ['echo "deploy step volume: $VC_VOLUME_PATH"; date > "$VC_VOLUME_PATH/deployed-by-step"'],
  });
  owner = await sessionAgent(t, w.owner);
}, 120_000);

afterAll(async () => {
  const rows = await t.deps.knex('services').select('database_name', 'role_name');
  for (const r of rows) {
    await adminQuery(`DROP DATABASE IF EXISTS "${r.database_name}_kept"`).catch(() => undefined);
    await dropServiceDatabase(t.config, { database: r.database_name, role: r.role_name });
  }
  const spaces = await adminQuery('SELECT spcname FROM pg_tablespace WHERE spcname LIKE $1', [
    `vc_${w.environment.id.replace(/-/g, '')}_%`,
  ]).catch(() => []);
  for (const s of spaces) await adminQuery(`DROP TABLESPACE IF EXISTS "${s.spcname}"`).catch(() => undefined);
});

describe('the volume (VC_VOLUME_PATH)', () => {
  it('deploy steps and the web process get it, owned by the environment, and what the app writes survives a redeploy', async () => {
    await runTask(`${env()}/services`, { kind: 'postgresql', plan: 'small' });
    const deploy = await runTask(`${env()}/deploy`);
    const dir = volumeAt(roots[0]);
    expect(await taskLog(t, owner, deploy.id)).toContain(`deploy step volume: ${dir}`);
    expect(await app('/where')).toEqual({ status: 200, text: dir });
    expect(await app('/put?name=note.txt&body=kept%20across%20releases')).toEqual({ status: 200, text: 'stored' });
    expect(readFileSync(join(dir, 'note.txt'), 'utf8')).toBe('kept across releases');
    const uid = tenantUid(w.environment.port);
    expect(statSync(dir).uid).toBe(uid);
    expect(statSync(join(dir, 'note.txt')).uid).toBe(uid);
    expect(existsSync(join(dir, 'deployed-by-step'))).toBe(true);

    await runTask(`${env()}/redeploy`);
    expect(await app('/get?name=note.txt')).toEqual({ status: 200, text: 'kept across releases' });
    const used = (await owner.get(`${env()}/storage/allowance`)).body.used_bytes;
    expect(used.files).toBeGreaterThan(0);
    expect(used.database).toBeGreaterThan(0);
  });
});

describe('POST /environments/{id}/storage/files/move', () => {
  it('moves the volume to the other root: the app reads the same file there, the old copy is kept', async () => {
    const task = await runTask(`${env()}/storage/files/move`, { location: roots[1] });
    expect(task.type).toBe('storage_move');
    const log = await taskLog(t, owner, task.id);
    expect(log).toContain('Stopping the web process');
    expect(log).toMatch(/Verified: \d+ files/);
    const moved = volumeAt(roots[1]);
    expect(readFileSync(join(moved, 'note.txt'), 'utf8')).toBe('kept across releases');
    expect(statSync(join(moved, 'note.txt')).uid).toBe(tenantUid(w.environment.port));
    expect(await app('/where')).toEqual({ status: 200, text: moved });
    expect(await app('/get?name=note.txt')).toEqual({ status: 200, text: 'kept across releases' });
    expect(await app('/put?name=after.txt&body=new')).toEqual({ status: 200, text: 'stored' });
    expect(existsSync(join(moved, 'after.txt'))).toBe(true);
    // the old copy is still there, and no longer written
    expect(readFileSync(join(volumeAt(roots[0]), 'note.txt'), 'utf8')).toBe('kept across releases');
    expect(existsSync(join(volumeAt(roots[0]), 'after.txt'))).toBe(false);
    const disk = (await owner.get(`${env()}/storage/files/disk`)).body;
    expect(disk).toMatchObject({ location: roots[1], old_location: roots[0] });
  });

  it('applying variables restarts the app with the same volume and database', async () => {
    await runTask(`${env()}/variables/apply`);
    expect(await app('/where')).toEqual({ status: 200, text: volumeAt(roots[1]) });
    expect(await app('/get?name=after.txt')).toEqual({ status: 200, text: 'new' });
    expect((await app('/')).status).toBe(200);
  });

  it('another move before the old copy is discarded is 422 on location', async () => {
    const res = await owner.post(`${env()}/storage/files/move`, { location: roots[0] });
    expect(res.status).toBe(422);
    expect(res.body.error.fields.location).toMatch(/discarded first/);
  });
});

describe('POST /environments/{id}/storage/database/move', () => {
  it('moves the database into a tablespace under the other root: the app reads the same rows', async () => {
    expect((await app('/write?body=one')).text).toBe('one');
    expect((await app('/write?body=two')).text).toBe('one,two');
    const service = await t.deps.knex('services').first('database_name');
    const task = await runTask(`${env()}/storage/database/move`, { location: roots[1] });
    expect(await taskLog(t, owner, task.id)).toMatch(/Verified: the copy has the same \d+ tables and 2 rows/);
    expect(await app('/')).toEqual({ status: 200, text: 'one,two' });
    const [where] = await adminQuery(
      `SELECT t.spcname, pg_tablespace_location(t.oid) AS location FROM pg_database d
       JOIN pg_tablespace t ON t.oid = d.dattablespace WHERE d.datname = $1`,
      [service.database_name],
    );
    expect(where.location.startsWith(join(roots[1], 'database', w.environment.id))).toBe(true);
    expect(statSync(where.location).isDirectory()).toBe(true);
    const kept = await adminQuery('SELECT datname FROM pg_database WHERE datname = $1', [
      `${service.database_name}_kept`,
    ]);
    expect(kept).toHaveLength(1);
    expect((await app('/write?body=three')).text).toBe('one,two,three');
    const disk = (await owner.get(`${env()}/storage/database/disk`)).body;
    expect(disk).toMatchObject({ location: roots[1], old_location: roots[0] });
    // the copy ran on the queue of the host that runs the services server (npm start's own: the file's host, as
    // its registration marks it), the web process's stop and start on the environment's host's queue, none on
    // the shared queue that any host's worker polls
    const { workflow_id } = await t.deps.knex('tasks').where({ id: task.id }).first('workflow_id');
    const history = await t.deps.temporal.workflow.getHandle(workflow_id).fetchHistory();
    const scheduled = Object.fromEntries(
      (history.events ?? []).flatMap((e) => {
        const a = e.activityTaskScheduledEventAttributes;
        return a ? [[a.activityType?.name, a.taskQueue?.name]] : [];
      }),
    );
    const services = (await t.deps.knex('hosts').where({ runs_services: true }).first('name')).name;
    expect(services).toBe(t.config.hostName);
    const hostQueue = hostTaskQueue(t.config.taskQueue, t.config.hostName);
    expect(scheduled).toMatchObject({
      stopWebForMove: hostQueue,
      moveDatabaseDisk: hostTaskQueue(t.config.taskQueue, services),
      startWebAfterMove: hostQueue,
    });
    expect(scheduled.moveStorageDisk).toBeUndefined();
  });

  it('a move run again after its swap, as when its worker died before recording it, ends the same move', async () => {
    // The disk's record as it was before the move above: its worker swapped the copy in and died right after.
    const row = await t.deps
      .knex('storage_disks')
      .where({ environment_id: w.environment.id, disk: 'database' })
      .first();
    await t.deps.knex('storage_disks').where({ id: row.id }).update({
      location: roots[0],
      old_location: null,
      generation: row.old_generation,
      old_generation: null,
    });
    const task = await runTask(`${env()}/storage/database/move`, { location: roots[1] });
    expect(await taskLog(t, owner, task.id)).toContain('already lives in');
    expect(await app('/')).toEqual({ status: 200, text: 'one,two,three' });
    expect((await app('/write?body=four')).text).toBe('one,two,three,four');
    const disk = (await owner.get(`${env()}/storage/database/disk`)).body;
    expect(disk).toMatchObject({ location: roots[1], old_location: roots[0] });
    const again = await t.deps.knex('storage_disks').where({ id: row.id }).first();
    expect(again).toMatchObject({ generation: row.generation, old_generation: row.old_generation });
  });
});

describe('POST /environments/{id}/storage/discard', () => {
  it('without confirm is 422 and keeps the copies; with it the old copies are gone and the app still answers', async () => {
    const refused = await owner.post(`${env()}/storage/discard`, { confirm: false });
    expect(refused.status).toBe(422);
    expect(refused.body.error.fields).toHaveProperty('confirm');
    expect(existsSync(volumeAt(roots[0]))).toBe(true);

    const service = await t.deps.knex('services').first('database_name');
    const task = await runTask(`${env()}/storage/discard`, { confirm: true });
    expect(task.result.discarded.sort()).toEqual([`database@${roots[0]}`, `files@${roots[0]}`]);
    expect(existsSync(volumeAt(roots[0]))).toBe(false);
    expect(existsSync(join(volumeAt(roots[1]), 'note.txt'))).toBe(true);
    expect(
      await adminQuery('SELECT datname FROM pg_database WHERE datname = $1', [`${service.database_name}_kept`]),
    ).toEqual([]);
    expect(await app('/get?name=note.txt')).toEqual({ status: 200, text: 'kept across releases' });
    expect(await app('/')).toEqual({ status: 200, text: 'one,two,three,four' });
    for (const disk of ['files', 'database']) {
      expect((await owner.get(`${env()}/storage/${disk}/disk`)).body).toMatchObject({ old_location: null });
    }
  });

  it('a second database move drops the previous tablespace when its copy is discarded', async () => {
    await runTask(`${env()}/storage/database/move`, { location: roots[0] });
    expect(await app('/')).toEqual({ status: 200, text: 'one,two,three,four' });
    const tablespace = join(roots[1], 'database', w.environment.id, '1');
    expect(existsSync(tablespace)).toBe(true);
    await runTask(`${env()}/storage/discard`, { confirm: true });
    expect(existsSync(tablespace)).toBe(false);
    const name = `vc_${w.environment.id.replace(/-/g, '')}_1`;
    expect(await adminQuery('SELECT 1 FROM pg_tablespace WHERE spcname = $1', [name])).toEqual([]);
    expect(await app('/')).toEqual({ status: 200, text: 'one,two,three,four' });
  });
});
