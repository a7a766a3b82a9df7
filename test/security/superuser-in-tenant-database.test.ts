import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { makeStorageRoots } from '../helpers/storage-roots';
import { commitDatabaseApp, databaseApp } from '../helpers/database-app';
import { createDeployWorld, taskLog, runTaskOk } from '../helpers/deploy-fixtures';
import { sessionAgent } from '../helpers/fixtures';
import type { Agent } from '../helpers/http';
import pg from 'pg';
import { dropServiceDatabase, serviceSessionUrl, withAdmin } from '../../host/pg-server';
import { open } from '../../system/crypto';
import { aad } from '../../db/aad';

/**
 * Issue 16, item 1, as the tenant would do it: its web process, with its own DATABASE_URL role, plants an
 * aggregate `evil.count(*)` whose final function, when the session is a superuser's, runs `COPY ... TO
 * PROGRAM` (a file written by the cluster's OS user) and makes the tenant's role a superuser; then it puts
 * `evil` first on its database's search_path. The owner then runs the operations that verify a copy by
 * counting rows (a database storage move, a reshape). Each must succeed and leave the role what it was: no
 * superuser, no file. On code that counts as the superuser inside the tenant's database, both happen.
 */
const t = useTestContext({ worker: true });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let owner: Agent;
let roots: [string, string];
const env = () => `/environments/${w.environment.id}`;
const pwnedDir = `/tmp/vc-sec-${randomBytes(6).toString('hex')}`;
const pwnedFile = (what: string) => join(pwnedDir, what);

const APP = `
const http = require('node:http');
const { execFileSync } = require('node:child_process');
const psql = (sql) => execFileSync('psql', [process.env.DATABASE_URL, '-v', 'ON_ERROR_STOP=1', '-Atc', sql], { encoding: 'utf8' }).trim();
http.createServer((req, res) => {
  const u = new URL(req.url, 'http://x');
  try {
    if (u.pathname === '/healthz') return res.end('ok');
    if (u.pathname === '/plant') {
      const role = new URL(process.env.DATABASE_URL).username;
      const file = u.searchParams.get('file');
      psql(\`
CREATE SCHEMA IF NOT EXISTS evil;
CREATE OR REPLACE FUNCTION evil.final(bigint) RETURNS bigint LANGUAGE plpgsql AS $f$
BEGIN
  IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
    EXECUTE pg_catalog.format('COPY (SELECT current_user) TO PROGRAM %L', 'cat > \${file}');
    EXECUTE pg_catalog.format('ALTER ROLE %I SUPERUSER', '\${role}');
  END IF;
  RETURN $1;
END $f$;
DO $d$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
                  WHERE n.nspname = 'evil' AND p.proname = 'count') THEN
    CREATE AGGREGATE evil.count(*) (SFUNC = pg_catalog.int8inc, STYPE = bigint, FINALFUNC = evil.final, INITCOND = '0');
  END IF;
  EXECUTE pg_catalog.format('ALTER DATABASE %I SET search_path = evil, pg_catalog, public', pg_catalog.current_database());
END $d$;\`);
      return res.end('planted');
    }
    if (u.pathname === '/super') return res.end(psql('SELECT rolsuper FROM pg_roles WHERE rolname = current_user'));
    if (u.pathname === '/write') psql("INSERT INTO notes (body) VALUES ('" + u.searchParams.get('body') + "')");
    res.end(psql('SELECT string_agg(body, \\',\\' ORDER BY id) FROM public.notes'));
  } catch (e) { res.writeHead(500); res.end(String(e.stderr || e.message)); }
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

const app = (p: string) => databaseApp(w.environment.port, p);

const runTask = (p: string, body: unknown = {}) => runTaskOk(t, owner, p, body, 180_000);

/** Whether any of the environment's service roles (current, next, old) is a superuser, as the server says. */
async function superRoles(): Promise<string[]> {
  const rows = await t.deps.knex('services').select('role_name', 'next_database_name', 'old_database_name');
  const names = rows.flatMap((r) => [r.role_name, r.next_database_name, r.old_database_name]).filter(Boolean);
  return withAdmin(t.config, async (c) =>
    (await c.query('SELECT rolname FROM pg_roles WHERE rolname = ANY($1) AND rolsuper', [names])).rows.map(
      (r) => r.rolname,
    ),
  );
}

beforeAll(async () => {
  mkdirSync(pwnedDir, { mode: 0o777 });
  chmodSync(pwnedDir, 0o777); // the cluster's OS user could write there, were its COPY TO PROGRAM ever run
  roots = makeStorageRoots(t);
  w = await createDeployWorld(t);
  commitDatabaseApp(w.repo.dir, { server: APP });
  owner = await sessionAgent(t, w.owner);
  await runTask(`${env()}/services`, { kind: 'postgresql', plan: 'small' });
  await runTask(`${env()}/deploy`);
  expect((await app('/write?body=one')).text).toBe('one');
}, 240_000);

afterAll(async () => {
  rmSync(pwnedDir, { recursive: true, force: true });
  const rows = await t.deps.knex('services').select('database_name', 'role_name', 'old_database_name');
  await withAdmin(t.config, async (c) => {
    for (const r of rows) await c.query(`DROP DATABASE IF EXISTS "${r.database_name}_kept"`).catch(() => undefined);
  }).catch(() => undefined);
  for (const r of rows) {
    await dropServiceDatabase(t.config, { database: r.database_name, role: r.role_name }).catch(() => undefined);
    if (r.old_database_name)
      await dropServiceDatabase(t.config, { database: r.old_database_name, role: r.old_database_name }).catch(
        () => undefined,
      );
  }
  const spaces = await withAdmin(
    t.config,
    async (c) =>
      (
        await c.query('SELECT spcname FROM pg_tablespace WHERE spcname LIKE $1', [
          `vc_${w.environment.id.replace(/-/g, '')}_%`,
        ])
      ).rows,
  ).catch(() => []);
  for (const s of spaces)
    await withAdmin(t.config, (c) => c.query(`DROP TABLESPACE IF EXISTS "${s.spcname}"`)).catch(() => undefined);
});

describe('a tenant plants evil.count(*) and puts it first on its database search_path', () => {
  it('the owner moves the database disk: the move verifies its copy, and the role stays no superuser, no file is written', async () => {
    expect(await app(`/plant?file=${pwnedFile('storage-move')}`)).toEqual({ status: 200, text: 'planted' });
    expect(await app('/super')).toEqual({ status: 200, text: 'f' });
    const task = await runTask(`${env()}/storage/database/move`, { location: roots[1] });
    expect(await taskLog(t, owner, task.id)).toMatch(/Verified: the copy has the same \d+ tables and 1 rows/);
    expect(existsSync(pwnedFile('storage-move'))).toBe(false);
    expect(await superRoles()).toEqual([]);
    expect(await app('/super')).toEqual({ status: 200, text: 'f' });
    expect(await app('/')).toEqual({ status: 200, text: 'one' });
  });

  it('the owner reshapes the database to its own server: the copy is verified, and nothing runs as the superuser', async () => {
    // planted again: a database-level setting does not travel with a copy of the database
    expect(await app(`/plant?file=${pwnedFile('reshape')}`)).toEqual({ status: 200, text: 'planted' });
    const task = await runTask(`${env()}/reshape`, { shape: 'separate', plan: 'medium' });
    expect(await taskLog(t, owner, task.id)).toMatch(/public\.notes: 1 rows in both/);
    expect(existsSync(pwnedFile('reshape'))).toBe(false);
    expect(await superRoles()).toEqual([]);
    expect(await app('/super')).toEqual({ status: 200, text: 'f' });
    expect(await app('/')).toEqual({ status: 200, text: 'one' });
  });
});

describe("the worker's sessions on the services server", () => {
  it('start with an empty search_path, whatever the tenant set on its database', async () => {
    expect(await app(`/plant?file=${pwnedFile('settings')}`)).toEqual({ status: 200, text: 'planted' });
    const row = await t.deps.knex('services').first();
    const login = {
      database: row.database_name,
      role: row.role_name,
      password: open(t.deps.secrets, row.password_sealed, aad.servicePassword(row.id)),
    };
    const c = new pg.Client({ connectionString: serviceSessionUrl(t.config, login) });
    await c.connect();
    try {
      expect((await c.query('SELECT pg_catalog.current_schemas(false)::pg_catalog.text AS s')).rows[0].s).toBe('{}');
    } finally {
      await c.end();
    }
    expect(
      await withAdmin(
        t.config,
        async (a) => (await a.query('SELECT pg_catalog.current_schemas(false)::pg_catalog.text AS s')).rows[0].s,
      ),
    ).toBe('{}');
  });
});
