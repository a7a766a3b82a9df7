/**
 * The edge serves every environment on its own port and verified domains on EDGE_PORT by Host, and it
 * does not depend on the worker: requests keep being answered while the worker is SIGKILLed and restarted.
 */
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until as untilHolds } from '../helpers/until';
import { useTestContext } from '../helpers/context';
import { createDeployWorld, createEnvironment, fetchEnvironment, waitForTask } from '../helpers/deploy-fixtures';
import { killAndWait, spawnSystemProcess, stopChildren } from '../helpers/processes';
import { sessionAgent } from '../helpers/fixtures';
import { runtimeCommand } from '../../edge/runtime-command';
import { startEdge } from '../../edge/server';
import { haproxyPaths } from '../../edge/haproxy/paths';

// three HAProxy threads: not HAProxy's default here, nor EDGE_THREADS' (one less than the cores)
const t = useTestContext({ edge: true, env: { EDGE_THREADS: '3' } });
const children: ChildProcess[] = [];
// a task waits this long for an edge (EDGE_TASK_WAIT_SECONDS): the held port's test waits it out once
const WORKER_ENV = { EDGE_TASK_WAIT_SECONDS: '10' };
let w: Awaited<ReturnType<typeof createDeployWorld>>;

beforeAll(async () => {
  w = await createDeployWorld(t);
  children.push(spawnSystemProcess(t, 'processes/worker.ts', WORKER_ENV));
  const res = await w.api.post(`/environments/${w.environment.id}/deploy`);
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, w.api, res.body.id, { timeoutMs: 90_000 });
  expect(task.status, task.error ?? '').toBe('succeeded');
}, 120_000);
afterAll(() => stopChildren(children));

/** GET / on the edge's Host listener with the given Host header. */
function viaHost(host: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port: t.edge!.port, path: '/', headers: { host }, agent: false },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: text.trim() }));
      },
    );
    req.on('error', reject);
  });
}

/** GET / on the environment's port from a given loopback address, with optional headers. */
function fromAddress(
  localAddress: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port: w.environment.port, path: '/', localAddress, headers, agent: false },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: text.trim() }));
      },
    );
    req.on('error', reject);
  });
}

/** The raw answer (body as bytes) of GET / on the environment's port. */
function raw(
  localAddress: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port: w.environment.port, path: '/', localAddress, headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    req.on('error', reject);
  });
}

/** Reads until `ok` holds: the edge serves a change a moment after it is written (helpers/until). */
const until = <T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> =>
  untilHolds('the edge to serve the change', read, ok, { timeoutMs: ms, intervalMs: 50 });

describe('the edge', () => {
  it('runs HAProxy with EDGE_THREADS threads', async () => {
    const info = await runtimeCommand(haproxyPaths(t.dataDir).admin, 'show info');
    expect(/^Nbthread: (\d+)/m.exec(info)?.[1]).toBe('3');
  });

  it('serves the environment on its own port', async () => {
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v1' });
  });

  it("takes a request with ~15 KiB of headers (HAProxy's 16 KiB buffer); a larger one gets the edge's 400", async () => {
    const filler = (n: number) => ({ 'x-filler': 'f'.repeat(n) });
    expect(await fromAddress('127.0.0.1', filler(14_500))).toMatchObject({ status: 200, text: 'v1' });
    expect((await fromAddress('127.0.0.1', filler(16_500))).status).toBe(400);
  });

  it('serves a verified domain on EDGE_PORT by Host; pending, unknown and deleted ones get 404', async () => {
    const base = {
      team_id: w.team.id,
      project_id: w.project.id,
      environment_id: w.environment.id,
      verification_value: 'x',
    };
    const [verified] = await t.deps
      .knex('domains')
      .insert({ ...base, hostname: 'shop.example.test', status: 'verified', verified_at: new Date() })
      .returning('id');
    await t.deps.knex('domains').insert({ ...base, hostname: 'pending.example.test', status: 'pending' });
    expect(
      await until(
        () => viaHost('Shop.Example.Test:8000'),
        (r) => r.status === 200,
      ),
    ).toEqual({ status: 200, text: 'v1' });
    expect((await viaHost('pending.example.test')).status).toBe(404);
    expect((await viaHost('unknown.example.test')).status).toBe(404);
    await t.deps.knex('domains').where({ id: verified.id }).delete();
    expect(
      (
        await until(
          () => viaHost('shop.example.test'),
          (r) => r.status === 404,
        )
      ).status,
    ).toBe(404);
  });

  it('DELETE /domains/{id} of a served domain answers once no edge serves it any more', async () => {
    const [domain] = await t.deps
      .knex('domains')
      .insert({
        team_id: w.team.id,
        project_id: w.project.id,
        environment_id: w.environment.id,
        verification_value: 'x',
        hostname: 'gone.example.test',
        status: 'verified',
        verified_at: new Date(),
      })
      .returning('id');
    expect(
      await until(
        () => viaHost('gone.example.test'),
        (r) => r.status === 200,
      ),
    ).toEqual({ status: 200, text: 'v1' });
    const owner = await sessionAgent(t, w.owner);
    expect((await owner.delete(`/domains/${domain.id}`)).status).toBe(204);
    // at once: no wait on this side
    expect((await viaHost('gone.example.test')).status).toBe(404);
  });

  it('POST /environments/{id}/maintenance: 503 with Retry-After and the note while on, traffic again when off', async () => {
    const owner = await sessionAgent(t, w.owner);
    const on = await owner.post(`/environments/${w.environment.id}/maintenance`, {
      maintenance: true,
      note: 'Back at <5pm>',
    });
    expect(on.status, on.text).toBe(202);
    expect(on.body).toMatchObject({ kind: 'maintenance', type: 'maintenance_on' });
    expect((await waitForTask(t, w.api, on.body.id, { timeoutMs: 30_000 })).status).toBe('succeeded');
    const res = await until(
      () => fetch(`http://127.0.0.1:${w.environment.port}/`),
      (r) => r.status === 503,
    );
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('300');
    expect(await res.text()).toContain('Back at &lt;5pm&gt;');
    const shown = (await owner.get(`/environments/${w.environment.id}`)).body.maintenance;
    expect(shown).toEqual({ on: true, note: 'Back at <5pm>', since: expect.any(String) });

    const off = await owner.post(`/environments/${w.environment.id}/maintenance`, { maintenance: false });
    expect((await waitForTask(t, w.api, off.body.id, { timeoutMs: 30_000 })).status).toBe('succeeded');
    expect(
      await until(
        () => fetchEnvironment(w.environment.port),
        (r) => r.status === 200,
      ),
    ).toEqual({ status: 200, text: 'v1' });
    expect((await owner.get(`/environments/${w.environment.id}`)).body.maintenance).toEqual({
      on: false,
      note: null,
      since: null,
    });
  });

  it('PATCH /environments/{id}/edge: allowed addresses (403 outside), a Basic password (401), stickiness; a refused save keeps nothing', async () => {
    const owner = await sessionAgent(t, w.owner);
    const edgeUrl = `/environments/${w.environment.id}/edge`;
    const bad = await owner.patch(edgeUrl, {
      allowed_addresses: ['127.0.0.1/32', 'nonsense', '10.0.0.0/33'],
      stickiness: true,
    });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.error.fields).sort()).toEqual(['allowed_addresses.1', 'allowed_addresses.2']);
    expect((await owner.get(edgeUrl)).body).toEqual({
      allowed_addresses: [],
      password: { enabled: false, username: null },
      stickiness: false,
    });

    const allowed = await owner.patch(edgeUrl, { allowed_addresses: ['127.0.0.1'] });
    expect(allowed.body.allowed_addresses).toEqual(['127.0.0.1/32']);
    expect(
      (
        await until(
          () => fromAddress('127.0.0.2'),
          (r) => r.status === 403,
        )
      ).status,
    ).toBe(403);
    expect((await fromAddress('127.0.0.1')).status).toBe(200);

    const sticky = await owner.patch(edgeUrl, { stickiness: true });
    expect(sticky.body).toEqual({
      allowed_addresses: ['127.0.0.1/32'],
      password: { enabled: false, username: null },
      stickiness: true,
    });
    const kept = await until(
      () => fromAddress('127.0.0.1'),
      (r) => String(r.headers['set-cookie']).startsWith('vc_instance='),
    );
    expect(kept).toMatchObject({ status: 200, text: 'v1' });
    expect(String(kept.headers['set-cookie'])).toMatch(/^vc_instance=[0-9a-f]+; path=\/; HttpOnly; SameSite=Lax/i);
    expect((await fromAddress('127.0.0.2')).status).toBe(403);

    await owner.patch(edgeUrl, { allowed_addresses: [], password: null, stickiness: false });
    expect(
      (
        await until(
          () => fromAddress('127.0.0.2'),
          (r) => r.status === 200,
        )
      ).status,
    ).toBe(200);
  });

  it('PATCH /environments/{id}/edge: a Basic password (401 without the right credentials, never kept in clear)', async () => {
    const owner = await sessionAgent(t, w.owner);
    const edgeUrl = `/environments/${w.environment.id}/edge`;
    try {
      await owner.patch(edgeUrl, { allowed_addresses: ['127.0.0.1'] });
      const withPassword = await owner.patch(edgeUrl, {
        password: { username: 'team', password: 'open sesame 1' },
        stickiness: true,
      });
      expect(withPassword.body).toEqual({
        allowed_addresses: ['127.0.0.1/32'],
        password: { enabled: true, username: 'team' },
        stickiness: true,
      });
      expect(withPassword.text).not.toContain('open sesame');
      const row = await t.deps.knex('environment_edges').where({ environment_id: w.environment.id }).first();
      expect(row.password_hash).toMatch(/^\$argon2id\$/);
      const denied = await until(
        () => fromAddress('127.0.0.1'),
        (r) => r.status === 401,
      );
      expect(denied.status).toBe(401);
      expect(denied.headers['www-authenticate']).toMatch(/^Basic /);
      const basic = (u: string, p: string) => ({
        authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`,
      });
      expect((await fromAddress('127.0.0.1', basic('team', 'wrong password'))).status).toBe(401);
      // the password is a runtime map change, stickiness a reload that may land later: wait for both
      const ok = await until(
        () => fromAddress('127.0.0.1', basic('team', 'open sesame 1')),
        (r) => r.status === 200 && String(r.headers['set-cookie']).startsWith('vc_instance='),
      );
      expect(ok).toMatchObject({ status: 200, text: 'v1' });
      expect(String(ok.headers['set-cookie'])).toMatch(/^vc_instance=/);
      expect((await fromAddress('127.0.0.2', basic('team', 'open sesame 1'))).status).toBe(403);
    } finally {
      await owner.patch(edgeUrl, { allowed_addresses: [], password: null, stickiness: false });
      expect(
        (
          await until(
            () => fromAddress('127.0.0.2'),
            (r) => r.status === 200,
          )
        ).status,
      ).toBe(200);
    }
  });

  it('PATCH /projects/{id}/edge: one save (faults named, nothing kept); blocks, rate limit, compression, no HSTS over http', async () => {
    const owner = await sessionAgent(t, w.owner);
    const edgeUrl = `/projects/${w.project.id}/edge`;
    const before = (await owner.get(edgeUrl)).body;
    const bad = await owner.patch(edgeUrl, {
      blocked_addresses: ['10.0.0.0/8', 'x', '127.0.0.2'],
      rate_limit: { requests: 0, per_seconds: 10 },
      hsts: { max_age: -1 },
      compression: 'yes',
    });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.error.fields).sort()).toEqual([
      'blocked_addresses.1',
      'compression',
      'hsts.max_age',
      'rate_limit.requests',
    ]);
    expect((await owner.get(edgeUrl)).body).toEqual(before);
    expect((await raw('127.0.0.2')).status).toBe(200);

    const saved = await owner.patch(edgeUrl, {
      blocked_addresses: ['127.0.0.2'],
      blocked_user_agents: ['EvilBot'],
      compression: true,
      hsts: { max_age: 600, include_subdomains: true },
    });
    expect(saved.status, saved.text).toBe(200);
    expect(saved.body).toMatchObject({
      blocked_addresses: ['127.0.0.2/32'],
      compression: true,
      hsts: { max_age: 600, include_subdomains: true, preload: false },
    });
    expect(
      (
        await until(
          () => raw('127.0.0.2'),
          (r) => r.status === 403,
        )
      ).status,
    ).toBe(403);
    expect((await raw('127.0.0.1', { 'user-agent': 'Mozilla/5.0 evilbot/2.1' })).status).toBe(403);
    const zipped = await raw('127.0.0.1', { 'accept-encoding': 'gzip', 'x-forwarded-proto': 'https' });
    expect(zipped.status).toBe(200);
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zlib.gunzipSync(zipped.body).toString().trim()).toBe('v1');
    expect(zipped.headers['strict-transport-security']).toBeUndefined();
    // HAProxy 2.6 compresses with gzip only (CONTRACT: gzip or br): a client preferring br gets gzip
    const br = await raw('127.0.0.1', { 'accept-encoding': 'br;q=1, gzip;q=0.5' });
    expect(br.headers['content-encoding']).toBe('gzip');
    expect(zlib.gunzipSync(br.body).toString().trim()).toBe('v1');
    expect((await raw('127.0.0.1')).headers['content-encoding']).toBeUndefined();

    await owner.patch(edgeUrl, { rate_limit: { requests: 3, per_seconds: 60 } });
    await t.edge!.reload(); // the edge reads the new rule now, whether or not the notification arrived yet
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push(await raw('127.0.0.3'));
    expect(statuses.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(Number(statuses[3].headers['retry-after'])).toBeGreaterThan(0);
    expect((await raw('127.0.0.4')).status).toBe(200);

    // The error page replaces the edge's own 502/503/504: here, an environment of the project with no release.
    const idle = await createEnvironment(t, w.project, { name: 'idle' });
    await owner.patch(edgeUrl, { pages: { error: '<h1>We will be right back</h1>' } });
    await t.edge!.reload();
    const page = await until(
      () => fetch(`http://127.0.0.1:${idle.port}/`).catch(() => null),
      (r) => r?.status === 503,
    );
    expect(page?.status).toBe(503);
    expect(await page?.text()).toBe('<h1>We will be right back</h1>');

    await owner.patch(edgeUrl, {
      blocked_addresses: [],
      blocked_user_agents: [],
      rate_limit: null,
      hsts: null,
      compression: false,
      pages: { error: null },
    });
    expect(
      (
        await until(
          () => raw('127.0.0.2'),
          (r) => r.status === 200,
        )
      ).status,
    ).toBe(200);
  });

  it('an Upgrade request (WebSocket) goes through every rule: allowed, blocked address and agent, rate limit, maintenance', async () => {
    const owner = await sessionAgent(t, w.owner);
    const upgrade = {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      'sec-websocket-version': '13',
    };
    const envEdge = `/environments/${w.environment.id}/edge`;
    const projectEdge = `/projects/${w.project.id}/edge`;
    try {
      await owner.patch(envEdge, { allowed_addresses: ['127.0.0.1'] });
      await t.edge!.reload();
      expect((await fromAddress('127.0.0.2', upgrade)).status).toBe(403);
      await owner.patch(envEdge, { allowed_addresses: [] });
      await owner.patch(projectEdge, { blocked_addresses: ['127.0.0.5'], blocked_user_agents: ['EvilBot'] });
      await t.edge!.reload();
      expect((await fromAddress('127.0.0.5', upgrade)).status).toBe(403);
      expect((await fromAddress('127.0.0.1', { ...upgrade, 'user-agent': 'evilbot 1' })).status).toBe(403);
      await owner.patch(projectEdge, {
        blocked_addresses: [],
        blocked_user_agents: [],
        rate_limit: { requests: 2, per_seconds: 60 },
      });
      await t.edge!.reload();
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await fromAddress('127.0.0.6', upgrade)).status);
      expect(statuses[2]).toBe(429);
      await owner.patch(projectEdge, { rate_limit: null });
      const on = await owner.post(`/environments/${w.environment.id}/maintenance`, { maintenance: true });
      expect((await waitForTask(t, w.api, on.body.id, { timeoutMs: 30_000 })).status).toBe('succeeded');
      const down = await fromAddress('127.0.0.1', upgrade);
      expect(down.status).toBe(503);
      expect(down.headers['retry-after']).toBe('300');
    } finally {
      await owner.patch(envEdge, { allowed_addresses: [] });
      await owner.patch(projectEdge, { blocked_addresses: [], blocked_user_agents: [], rate_limit: null });
      const off = await owner.post(`/environments/${w.environment.id}/maintenance`, { maintenance: false });
      await waitForTask(t, w.api, off.body.id, { timeoutMs: 30_000 });
    }
    expect((await fromAddress('127.0.0.1')).status).toBe(200);
  });

  it('keeps answering while the worker is SIGKILLed and restarted, and deploys again after', async () => {
    let stop = false;
    const statuses: number[] = [];
    const load = (async () => {
      while (!stop) {
        statuses.push((await fetchEnvironment(w.environment.port).catch(() => ({ status: 0, text: '' }))).status);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    await new Promise((r) => setTimeout(r, 300));
    await killAndWait(children[0], 'SIGKILL');
    await new Promise((r) => setTimeout(r, 1000)); // the worker is down: the edge serves on
    children.push(spawnSystemProcess(t, 'processes/worker.ts', WORKER_ENV));
    await new Promise((r) => setTimeout(r, 3000)); // the new worker restores the web process and publishes it
    stop = true;
    await load;
    expect(statuses.length).toBeGreaterThan(20);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);

    w.repo.commit('v2');
    const res = await w.api.post(`/environments/${w.environment.id}/deploy`);
    const task = await waitForTask(t, w.api, res.body.id, { timeoutMs: 90_000 });
    expect(task.status, task.error ?? '').toBe('succeeded');
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v2' });
  });

  it("a task of an environment whose port another program holds on an edge's host fails naming it, and succeeds once it is free", async () => {
    const env = `/environments/${w.environment.id}`;
    const port = w.environment.port;
    const owner = await sessionAgent(t, w.owner);
    // a second edge on an address of its own, where another program listens on the environment's port first
    const address = '127.0.0.6';
    const hold = async (p: number) => {
      const server = net.createServer((s) => s.end('HTTP/1.1 418 Not the edge\r\ncontent-length: 0\r\n\r\n'));
      await new Promise<void>((r) => server.listen({ port: p, host: address }, () => r()));
      return server;
    };
    const holder = await hold(port);
    let holding = true;
    // and the port a new environment would be given next
    const { from, to } = t.config.environmentPorts;
    const { rows } = await t.deps.knex.raw(
      `SELECT min(p)::int AS p FROM generate_series(?::int, ?::int) p
        WHERE NOT EXISTS (SELECT 1 FROM environments WHERE port = p) AND NOT EXISTS (SELECT 1 FROM retiring_ports WHERE port = p)`,
      [from, to],
    );
    const next: number = rows[0].p;
    const nextHolder = await hold(next);
    const before = new Set((await t.deps.knex('edge_instances').select('id')).map((r) => r.id));
    const second = await startEdge({
      knex: t.deps.knex,
      databaseUrl: t.config.databaseUrl!,
      host: address,
      edgePort: 0,
      environmentPorts: t.config.environmentPorts,
      dataDir: `${t.dataDir}/held-port-edge`,
      secrets: t.deps.secrets,
    });
    try {
      const row = await t.deps
        .knex('edge_instances')
        .whereNotIn('id', [...before])
        .first('held_ports');
      expect(row.held_ports).toEqual([port, next].sort((a, b) => a - b));
      // a new environment is not given a port that edge cannot listen on
      const created = await owner.post(`/projects/${w.project.id}/environments`, {
        name: 'held-next',
        git_ref: 'main',
      });
      expect(created.status, created.text).toBe(201);
      const given = await t.deps.knex('environments').where({ id: created.body.id }).first('port');
      expect(given.port).toBeGreaterThan(next);
      const on = await owner.post(`${env}/maintenance`, { maintenance: true });
      expect(on.status, on.text).toBe(202);
      const failed = await waitForTask(t, w.api, on.body.id, { timeoutMs: 40_000 });
      expect(failed.status).toBe('failed');
      expect(failed.error).toContain(
        `cannot listen on the environment's port ${port}: another program on its host holds it`,
      );
      expect(failed.error).toContain(`ss -ltnp 'sport = :${port}'`);
      expect(failed.error).toContain('held-port-edge'); // the edge's name: its host and DATA_DIR
      // the change is saved: the edge that can serve the port answers with the maintenance page
      expect((await fetchEnvironment(port)).status).toBe(503);

      await new Promise((r) => holder.close(r));
      holding = false;
      const off = await owner.post(`${env}/maintenance`, { maintenance: false });
      expect(off.status, off.text).toBe(202);
      const done = await waitForTask(t, w.api, off.body.id, { timeoutMs: 40_000 });
      expect(done.status, done.error ?? '').toBe('succeeded');
      // the second edge listens on the port now, and serves the app there
      const served = await new Promise<number>((resolve, reject) =>
        http
          .get({ host: address, port, path: '/', agent: false }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          })
          .on('error', reject),
      );
      expect(served).toBe(200);
      expect(
        (
          await t.deps
            .knex('edge_instances')
            .whereNotIn('id', [...before])
            .first('held_ports')
        ).held_ports,
      ).toEqual([next]);
    } finally {
      await second.close().catch(() => undefined);
      if (holding) await new Promise((r) => holder.close(r));
      await new Promise((r) => nextHolder.close(r));
      await t.deps
        .knex('edge_instances')
        .whereNotIn('id', [...before])
        .delete();
    }
  }, 120_000);
});
