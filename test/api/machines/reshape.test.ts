import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { commitDatabaseApp, databaseApp } from '../../helpers/database-app';
import { createDeployWorld, taskLog, waitForTask, runTaskOk } from '../../helpers/deploy-fixtures';
import { sessionAgent } from '../../helpers/fixtures';
import type { Agent } from '../../helpers/http';
import { dropServiceDatabase, servicesAdminUrl, withAdmin } from '../../../host/pg-server';

/**
 * Reshape through the real stack: a postgresql service on the tests' services server, a deployed app reading
 * and writing rows through DATABASE_URL; the database moved to a server of its own (copied into a new
 * database with a new login, the app restarted on it), the old one kept read-only until discarded, then moved
 * back; prices, refusals that change nothing, and the one-change-at-a-time rule.
 */
const t = useTestContext({ worker: true });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let owner: Agent;
const env = () => `/environments/${w.environment.id}`;

const commitApp = (gate?: string) => commitDatabaseApp(w.repo.dir, { gate });
const app = (path: string) => databaseApp(w.environment.port, path);

/** The role and database the app's DATABASE_URL reaches, and the user named in the URL itself. */
async function whoami() {
  const { text } = await app('/whoami');
  const [role, database, urlUser] = text.split(' ');
  return { role, database, urlUser };
}

const runTask = (path: string, body: unknown) => runTaskOk(t, owner, path, body, 120_000);

const databaseExists = (name: string) =>
  withAdmin(
    t.config,
    async (c) => ((await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount ?? 0) > 0,
  );
const roleExists = (name: string) =>
  withAdmin(
    t.config,
    async (c) => ((await c.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name])).rowCount ?? 0) > 0,
  );
const reshapeTasks = async () =>
  Number((await t.deps.knex('tasks').where({ type: 'reshape' }).count({ n: '*' }).first())?.n);
const envServers = async () =>
  (await owner.get(`/servers?team=${w.team.id}`)).body.data.filter(
    (s: { environment_id: string }) => s.environment_id === w.environment.id,
  );
const databaseServers = async () => (await envServers()).filter((s: { role: string }) => s.role === 'database');

/** Runs SQL in a service database as the services server's superuser, on a connection of its own. */
async function asAdminIn(database: string, sql: string) {
  const url = new URL(servicesAdminUrl(t.config));
  url.pathname = `/${database}`;
  const c = new pg.Client({ connectionString: url.toString() });
  await c.connect();
  try {
    return await c.query(sql);
  } finally {
    await c.end().catch(() => undefined);
  }
}

beforeAll(async () => {
  w = await createDeployWorld(t);
  commitApp();
  owner = await sessionAgent(t, w.owner);
}, 120_000);

afterAll(async () => {
  const rows = await t.deps.knex('services').select('database_name', 'old_database_name', 'next_database_name');
  for (const r of rows)
    for (const name of [r.database_name, r.old_database_name, r.next_database_name].filter(Boolean))
      await dropServiceDatabase(t.config, { database: name, role: name });
});

describe('an environment without a database service', () => {
  it('GET /environments/{id}/reshape says combined with no choices; reshape and discard are refused', async () => {
    const got = await owner.get(`${env()}/reshape`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ shape: 'combined', service_id: null, server_id: null, old_database: null });
    expect(got.body.choices).toEqual([]);
    expect(got.body.unavailable_reason).toMatch(/no PostgreSQL database service/);
    for (const path of [`${env()}/reshape`, `${env()}/reshape/preview`]) {
      const res = await owner.post(path, { shape: 'separate' });
      expect(res.status, path).toBe(409);
      expect(res.body.error.code).toBe('no_database_service');
      expect(res.body.error.message).toMatch(/no PostgreSQL database service/);
    }
    const discard = await owner.post(`${env()}/discard-old-database`, { confirm: true });
    expect(discard.status).toBe(409);
    expect(discard.body.error.code).toBe('no_old_database');
    expect(await reshapeTasks()).toBe(0);
  });
});

describe('POST /environments/{id}/reshape', () => {
  let first: { role: string; database: string; urlUser: string };
  let second: { role: string; database: string; urlUser: string };
  let databaseServerId: string;

  beforeAll(async () => {
    await runTask(`${env()}/services`, { kind: 'postgresql', plan: 'small' });
    await runTask(`${env()}/deploy`, {});
    expect(await app('/write?body=alpha')).toEqual({ status: 200, text: 'alpha' });
    expect(await app('/write?body=beta')).toEqual({ status: 200, text: 'alpha,beta' });
    first = await whoami();
    expect(first.role).toMatch(/^svc_/);
    expect(first.urlUser).toBe(first.role);
  }, 240_000);

  it('GET and preview price the choices from the price list and change nothing', async () => {
    const got = await owner.get(`${env()}/reshape`);
    expect(got.body).toMatchObject({ shape: 'combined', server_id: null, old_database: null, currency: 'EUR' });
    expect(got.body.unavailable_reason).toBeNull();
    expect(got.body.choices.map((c: { plan: string }) => c.plan)).toEqual([
      'nano',
      'small',
      'medium',
      'large',
      'xlarge',
    ]);
    expect(got.body.choices.find((c: { plan: string }) => c.plan === 'medium')).toEqual({
      shape: 'separate',
      plan: 'medium',
      cpu: 1,
      memory_mb: 1024,
      disk_gb: 20,
      monthly_price: 16,
      monthly_price_delta: 16,
    });
    const medium = await owner.post(`${env()}/reshape/preview`, { shape: 'separate', plan: 'medium' });
    expect(medium.status).toBe(200);
    expect(medium.body).toMatchObject({ shape: 'separate', plan: 'medium', monthly_price_delta: 16, currency: 'EUR' });
    expect(medium.body.changes.join('\n')).toMatch(/database server .*-database on plan medium/);
    // Without a plan: the service's own plan.
    const byDefault = await owner.post(`${env()}/reshape/preview`, { shape: 'separate' });
    expect(byDefault.body).toMatchObject({ plan: 'small', monthly_price_delta: 8 });
    expect(await reshapeTasks()).toBe(0);
    expect(await databaseServers()).toEqual([]);
  });

  it('bad input is refused with 422 naming each field, and nothing changes', async () => {
    const cases: Array<[unknown, string[]]> = [
      [{ shape: 'combined' }, ['shape']],
      [{ shape: 'round' }, ['shape']],
      [{}, ['shape']],
      [{ shape: 'separate', plan: 'huge' }, ['plan']],
      [{ shape: 'combined', plan: 'small' }, ['shape', 'plan']],
      [{ shape: 'separate', colour: 'red' }, ['colour']],
    ];
    for (const [body, fields] of cases) {
      for (const path of [`${env()}/reshape`, `${env()}/reshape/preview`]) {
        const res = await owner.post(path, body);
        expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(422);
        expect(Object.keys(res.body.error.fields).sort(), JSON.stringify(body)).toEqual([...fields].sort());
      }
    }
    for (const body of [{}, { confirm: false }, { confirm: 'yes' }]) {
      const res = await owner.post(`${env()}/discard-old-database`, body);
      expect(res.status).toBe(422);
      expect(res.body.error.fields).toHaveProperty('confirm');
    }
    // A personal access token does not reach reshape (a signed-in caller does).
    const byToken = await w.api.post(`${env()}/reshape`, { shape: 'separate' });
    expect(byToken.body.error.code).toBe('token_not_allowed');
    expect(await reshapeTasks()).toBe(0);
    expect(await whoami()).toEqual(first);
    expect((await t.deps.knex('services').first()).shape).toBe('combined');
  });

  it('is refused with 409 and the task id while a deploy runs on the environment', async () => {
    commitApp(w.repo.gate);
    const deploy = await owner.post(`${env()}/deploy`, {});
    expect(deploy.status).toBe(202);
    try {
      const res = await owner.post(`${env()}/reshape`, { shape: 'separate' });
      expect(res.status).toBe(409);
      expect(res.body.error).toMatchObject({ code: 'deploy_in_progress', task_id: deploy.body.id });
      expect(await reshapeTasks()).toBe(0);
    } finally {
      writeFileSync(w.repo.gate, '');
    }
    const done = await waitForTask(t, owner, deploy.body.id, { timeoutMs: 120_000 });
    expect(done.status).toBe('succeeded');
    expect(await app('/')).toEqual({ status: 200, text: 'alpha,beta' });
  });

  it('a copy that fails leaves the database where it was, writable, and drops the half-made copy', async () => {
    // A table the service's own role cannot read: pg_dump, logged in as that role, fails on it.
    const databases = () =>
      withAdmin(t.config, async (c) =>
        (await c.query("SELECT datname FROM pg_database WHERE datname LIKE 'svc_%' ORDER BY 1")).rows.map(
          (r) => r.datname,
        ),
      );
    await asAdminIn(first.database, 'CREATE TABLE locked (x int); REVOKE ALL ON locked FROM PUBLIC');
    try {
      const before = await databases();
      const res = await owner.post(`${env()}/reshape`, { shape: 'separate' });
      expect(res.status).toBe(202);
      const task = await waitForTask(t, owner, res.body.id, { timeoutMs: 120_000 });
      expect(task.status).toBe('failed');
      expect(task.error).toMatch(/the copy failed: .*pg_dump.*permission denied.*the database stays combined/s);
      // The services server is the whole run's: other files' databases come and go meanwhile. This file's
      // database is still there, and the copy the task made (its log names it) is gone.
      const copy = /==> Creating database (svc_[0-9a-f]+)/.exec(
        (await owner.get(`/tasks/${res.body.id}/log`)).text,
      )?.[1];
      expect(copy).toMatch(/^svc_/);
      expect(before).not.toContain(copy);
      const after = await databases();
      expect(after).not.toContain(copy);
      expect(after).toContain(first.database);
      expect(await whoami()).toEqual(first);
      expect(await app('/write?body=beta2')).toEqual({ status: 200, text: 'alpha,beta,beta2' });
      const row = await t.deps.knex('services').first();
      expect(row).toMatchObject({
        shape: 'combined',
        server_id: null,
        next_database_name: null,
        old_database_name: null,
      });
      expect(await databaseServers()).toEqual([]);
      expect(
        await t.deps.knex('subscriptions').where({ kind: 'server' }).whereLike('item', 'Database server%').first(),
      ).toBeUndefined();
    } finally {
      await asAdminIn(first.database, "DROP TABLE IF EXISTS locked; DELETE FROM notes WHERE body = 'beta2'");
    }
  });

  it('to separate: the app answers with the same rows over a new DATABASE_URL; the old database is kept read-only', async () => {
    const task = await runTask(`${env()}/reshape`, { shape: 'separate', plan: 'medium' });
    expect(task).toMatchObject({ kind: 'machines', type: 'reshape' });
    expect(task.result).toMatchObject({ shape: 'separate', tables: 1, rows: 2 });
    expect(task.result.writes_paused_ms).toEqual(expect.any(Number));
    const log = await taskLog(t, owner, task.id);
    expect(log).toMatch(/public\.notes: 2 rows in both/);
    expect(log).toMatch(/Verified: 1 tables, 2 rows/);

    expect(await app('/')).toEqual({ status: 200, text: 'alpha,beta' });
    second = await whoami();
    expect(second.role).not.toBe(first.role);
    expect(second.database).not.toBe(first.database);
    expect(second.urlUser).toBe(second.role);
    expect(await app('/write?body=gamma')).toEqual({ status: 200, text: 'alpha,beta,gamma' });

    const servers = await envServers();
    const database = servers.find((s: { role: string }) => s.role === 'database');
    expect(database).toMatchObject({ plan: 'medium', cpu: 1, memory_mb: 1024, status: 'running', monthly_price: 16 });
    databaseServerId = database.id;
    expect(task.result.server_id).toBe(databaseServerId);
    const services = await owner.get(`${env()}/services`);
    expect(services.body.data[0]).toMatchObject({ status: 'available', server_id: databaseServerId });
    const sub = await t.deps.knex('subscriptions').where({ kind: 'server', resource_id: databaseServerId }).first();
    expect(sub).toMatchObject({ status: 'active', monthly_price: '16.00', currency: 'EUR' });
    // The database server resizes like any server: its plan (here a record of the local provider) changes.
    const resize = await runTask(`/servers/${databaseServerId}/resize`, { plan: 'large' });
    expect(resize).toMatchObject({ type: 'resize', result: { plan: 'large', instances_restarted: 0 } });
    expect((await databaseServers())[0]).toMatchObject({ plan: 'large', cpu: 2, status: 'running', monthly_price: 32 });
    expect(await app('/')).toEqual({ status: 200, text: 'alpha,beta,gamma' });

    const got = await owner.get(`${env()}/reshape`);
    expect(got.body).toMatchObject({ shape: 'separate', server_id: databaseServerId, choices: [] });
    expect(got.body.old_database).toMatchObject({ server_id: null });
    expect(got.body.unavailable_reason).toMatch(/discard it first/);

    // The old database is still there, with the rows as they were, and takes no writes.
    expect(await databaseExists(first.database)).toBe(true);
    const kept = await asAdminIn(first.database, 'SELECT body FROM notes ORDER BY id');
    expect(kept.rows.map((r) => r.body)).toEqual(['alpha', 'beta']);
    await expect(asAdminIn(first.database, "INSERT INTO notes (body) VALUES ('stale')")).rejects.toThrow(/read-only/);
    // Another reshape waits for the discard.
    const again = await owner.post(`${env()}/reshape`, { shape: 'combined' });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('old_database_kept');
  });

  it('discard-old-database drops the old database and its role', async () => {
    const task = await runTask(`${env()}/discard-old-database`, { confirm: true });
    expect(task).toMatchObject({ kind: 'machines', type: 'discard_old_database' });
    expect(await databaseExists(first.database)).toBe(false);
    expect(await roleExists(first.role)).toBe(false);
    expect(await app('/')).toEqual({ status: 200, text: 'alpha,beta,gamma' });
    expect((await owner.get(`${env()}/reshape`)).body.old_database).toBeNull();
    const again = await owner.post(`${env()}/discard-old-database`, { confirm: true });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('no_old_database');
  });

  it('back to combined: the rows follow; the database server ends with the discard', async () => {
    const preview = await owner.post(`${env()}/reshape/preview`, { shape: 'combined' });
    expect(preview.body).toMatchObject({ shape: 'combined', plan: null, monthly_price_delta: -32 });
    const choices = (await owner.get(`${env()}/reshape`)).body.choices;
    expect(choices).toEqual([expect.objectContaining({ shape: 'combined', plan: null, monthly_price_delta: -32 })]);

    await runTask(`${env()}/reshape`, { shape: 'combined' });
    expect(await app('/')).toEqual({ status: 200, text: 'alpha,beta,gamma' });
    const third = await whoami();
    expect(third.role).not.toBe(second.role);
    expect(third.database).not.toBe(second.database);
    const old = (await envServers()).find((s: { role: string }) => s.role === 'database');
    expect(old).toMatchObject({ id: databaseServerId, status: 'old' });
    expect((await owner.get(`${env()}/reshape`)).body).toMatchObject({
      shape: 'combined',
      server_id: null,
      old_database: { server_id: databaseServerId },
    });
    expect((await owner.get(`${env()}/services`)).body.data[0].server_id).toBeNull();
    // The old server only keeps the old database: it is not resized or rebooted.
    for (const [path, body] of [
      [`/servers/${databaseServerId}/resize`, { plan: 'large' }],
      [`/servers/${databaseServerId}/reboot`, undefined],
    ] as const) {
      const res = await owner.post(path, body);
      expect(res.status, path).toBe(409);
      expect(res.body.error.message).toMatch(/discard-old-database/);
    }

    await runTask(`${env()}/discard-old-database`, { confirm: true });
    expect(await databaseExists(second.database)).toBe(false);
    expect(await databaseServers()).toEqual([]);
    const sub = await t.deps.knex('subscriptions').where({ kind: 'server', resource_id: databaseServerId }).first();
    expect(sub.status).toBe('ended');
    expect(sub.ended_at).toBeTruthy();
    expect(await app('/write?body=delta')).toEqual({ status: 200, text: 'alpha,beta,gamma,delta' });
    expect((await owner.get(`${env()}/reshape`)).body.choices).toHaveLength(5);
  });
});

describe('DELETE /environments/{id}', () => {
  it('drops the old database a reshape kept, with the current one', async () => {
    await runTask(`${env()}/reshape`, { shape: 'separate', plan: 'nano' });
    const row = await t.deps.knex('services').first();
    expect(row.old_database_name).toBeTruthy();
    expect(await databaseExists(row.old_database_name)).toBe(true);
    expect((await owner.delete(env())).status).toBe(204);
    for (const name of [row.database_name, row.old_database_name]) {
      expect(await databaseExists(name)).toBe(false);
      expect(await roleExists(name)).toBe(false);
    }
  });
});
