import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createDeployWorld, taskLog, waitForTask } from '../helpers/deploy-fixtures';
import { sessionAgent } from '../helpers/fixtures';
import type { Agent } from '../helpers/http';
import { dropServiceDatabase, servicesAdminUrl } from '../../host/pg-server';

/**
 * Issue 16, item 5, as a tenant would do it: its web process, with its own service role, opens a session on
 * `template1` (and `postgres`) of the services server and holds it; every other team's service creation then
 * failed ("source database template1 is being accessed by other users"). Now CONNECT on those databases is
 * revoked from PUBLIC, and every database is created from `template0`, which nobody can open: even a session
 * held on template1 (here the superuser's, as only it still can) blocks no other team's service.
 */
const t = useTestContext({ worker: true });
let tenant: Awaited<ReturnType<typeof createDeployWorld>>;
let other: Awaited<ReturnType<typeof createDeployWorld>>;
let owner: Agent;

const APP = `
const http = require('node:http');
const { spawnSync } = require('node:child_process');
http.createServer((req, res) => {
  const u = new URL(req.url, 'http://x');
  if (u.pathname === '/healthz') return res.end('ok');
  if (u.pathname === '/open') {
    // its own role and password (PGUSER, PGPASSWORD, PGHOST, PGPORT), another database
    const r = spawnSync('psql', ['-d', u.searchParams.get('db'), '-Atc', 'SELECT current_database()'], { encoding: 'utf8' });
    return res.end(JSON.stringify({ status: r.status, out: (r.stdout || '').trim(), err: (r.stderr || '').trim() }));
  }
  res.end('up');
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

async function runTask(agent: Agent, p: string, body: unknown = {}) {
  const res = await agent.post(p, body);
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, agent, res.body.id, { timeoutMs: 180_000 });
  expect(task.status, `${task.error ?? ''}\n${await taskLog(t, agent, task.id)}`).toBe('succeeded');
  return task;
}

async function open(db: string): Promise<{ status: number; out: string; err: string }> {
  const res = await fetch(`http://127.0.0.1:${tenant.environment.port}/open?db=${db}`);
  return JSON.parse(await res.text());
}

beforeAll(async () => {
  tenant = await createDeployWorld(t);
  writeFileSync(join(tenant.repo.dir, 'server.js'), APP);
  writeFileSync(
    join(tenant.repo.dir, 'service.yaml'),
    ['build: []', 'web: node server.js', 'health: /healthz', ''].join('\n'),
  );
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qam', 'psql app'], {
    cwd: tenant.repo.dir,
  });
  owner = await sessionAgent(t, tenant.owner);
  await runTask(owner, `/environments/${tenant.environment.id}/services`, { kind: 'postgresql', plan: 'small' });
  await runTask(owner, `/environments/${tenant.environment.id}/deploy`);
  other = await createDeployWorld(t);
}, 300_000);

afterAll(async () => {
  const rows = await t.deps.knex('services').select('database_name', 'role_name');
  for (const r of rows)
    await dropServiceDatabase(t.config, { database: r.database_name, role: r.role_name }).catch(() => undefined);
});

describe("a tenant's role on the services server", () => {
  it('opens its own database, and is refused on template1 and postgres', async () => {
    const own = await t.deps.knex('services').where({ environment_id: tenant.environment.id }).first('database_name');
    expect(await open(own.database_name)).toMatchObject({ status: 0, out: own.database_name });
    for (const db of ['template1', 'postgres']) {
      const r = await open(db);
      expect(r.status, r.out).not.toBe(0);
      expect(r.err).toMatch(new RegExp(`permission denied for database "?${db}"?`));
    }
  });

  it("a session held on template1 blocks no other team's service creation", async () => {
    const url = new URL(servicesAdminUrl(t.config));
    url.pathname = '/template1';
    const held = new pg.Client({ connectionString: url.toString() });
    await held.connect();
    try {
      const otherOwner = await sessionAgent(t, other.owner);
      const task = await runTask(otherOwner, `/environments/${other.environment.id}/services`, {
        kind: 'postgresql',
        plan: 'small',
      });
      expect(task.type).toBe('service_create');
      const service = await t.deps.knex('services').where({ environment_id: other.environment.id }).first();
      expect(service.status).toBe('available');
      // still held while the other team's database was made
      expect((await held.query('SELECT current_database() AS d')).rows[0].d).toBe('template1');
    } finally {
      await held.end();
    }
  });
});
