/**
 * Structural changes do not reload HAProxy (issue 28 item 5): environments added and removed, stickiness and
 * compression toggled, a new rate-limit window, a blocked list that appears and is emptied, an allow list, a
 * maintenance page, an error page set, changed and cleared, and more instances than an environment had, each in
 * force when its write answers (or once the edges applied it), while one kept-alive client connection to another
 * environment stays open: the same socket answers after every change, and neither the control plane nor
 * HAProxy's master counts a reload.
 */
import http from 'node:http';
import net from 'node:net';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import { until } from '../helpers/until';
import { awaitEdges } from '../../db/queries/edge-routes';
import { haproxyPaths } from '../../edge/haproxy/paths';
import { masterReloads } from '../../edge/haproxy/process';

const t = useTestContext({ edge: true });
const apps: http.Server[] = [];
const appPorts: number[] = [];

beforeAll(async () => {
  // four instances (SCALE_MAX's default), each answering its own name, with enough text to be compressed
  for (let i = 1; i <= 4; i++) {
    const app = http.createServer((_req, res) => {
      res.setHeader('content-type', 'text/plain');
      res.end(`instance ${i}\n${'x'.repeat(2000)}\n`);
    });
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    apps.push(app);
    appPorts.push((app.address() as { port: number }).port);
  }
});
afterAll(async () => {
  for (const app of apps) {
    app.closeAllConnections();
    await new Promise((r) => app.close(r));
  }
});

/** One kept-alive connection: each `get()` sends a request on it and resolves with the answer's status. */
function keptAlive(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  let buffer = '';
  let closed = false;
  socket.on('data', (c) => (buffer += c.toString('latin1')));
  socket.on('close', () => (closed = true));
  socket.on('error', () => (closed = true));
  return {
    socket,
    closed: () => closed,
    async get(): Promise<number> {
      buffer = '';
      socket.write(`GET / HTTP/1.1\r\nHost: kept.example\r\n\r\n`);
      const whole = () => {
        const end = buffer.indexOf('\r\n\r\n');
        const length = Number(/content-length: (\d+)/i.exec(buffer)?.[1] ?? -1);
        return end >= 0 && length >= 0 && buffer.length >= end + 4 + length;
      };
      await until('the answer on the kept-alive connection', () => closed || whole(), {
        timeoutMs: 5000,
        intervalMs: 10,
      });
      if (!whole()) return 0;
      return Number(buffer.slice(9, 12));
    },
  };
}

function get(
  port: number,
  o: { headers?: Record<string, string>; localAddress?: string } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port, path: '/', headers: o.headers, localAddress: o.localAddress, agent: false },
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

const route = (upstreams: number[]) =>
  JSON.stringify(upstreams.map((port, i) => ({ id: String(i + 1), host: '127.0.0.1', port })));

describe('the edge without reloads', () => {
  it('adds and removes environments, toggles rules and pages and scales while a kept-alive connection to another environment stays open', async () => {
    const owner = await createUser(t);
    const team = await createTeam(t, owner);
    const project = await createProject(t, team);
    const api = await sessionAgent(t, owner);
    const kept = await createEnvironment(t, project, { name: 'kept' });
    await t.deps.knex('edge_routes').insert({ environment_id: kept.id, upstreams: route([appPorts[0]]) });
    await awaitEdges(t.deps.knex);

    const paths = haproxyPaths(t.dataDir);
    const reloadsBefore = t.edge!.reloads();
    const masterBefore = await masterReloads(paths);
    expect(masterBefore).not.toBeNull();

    // an environment on a port outside ENVIRONMENT_PORTS (left from a wider range) is not served, and holds
    // nothing up: every change below is applied
    const { to } = t.config.environmentPorts;
    const [stray] = await t.deps
      .knex('environments')
      .insert({ team_id: team.id, project_id: project.id, name: 'stray', git_ref: 'main', port: to + 1 })
      .returning(['id', 'port']);
    expect(stray.port).toBeGreaterThan(to);
    await t.deps.knex('edge_routes').insert({ environment_id: stray.id, upstreams: route([appPorts[0]]) });
    await awaitEdges(t.deps.knex);

    const client = keptAlive(kept.port);
    await new Promise((r) => client.socket.once('connect', r));
    const localPort = client.socket.localPort;
    /** The kept-alive connection answers again, on the same socket (every step is well within 5 s of idle). */
    const stillServed = async () => {
      expect(await client.get()).toBe(200);
      expect(client.closed()).toBe(false);
      expect(client.socket.localPort).toBe(localPort);
    };
    await stillServed();

    // an environment added, with a route
    const added = await createEnvironment(t, project, { name: 'added' });
    await t.deps.knex('edge_routes').insert({ environment_id: added.id, upstreams: route([appPorts[1]]) });
    await awaitEdges(t.deps.knex);
    const first = await get(added.port);
    expect(first.status).toBe(200);
    expect(first.body.toString()).toMatch(/^instance 2\n/);
    await stillServed();

    // stickiness on: the cookie; off: none
    expect((await api.patch(`/environments/${added.id}/edge`, { stickiness: true })).status).toBe(200);
    expect(String((await get(added.port)).headers['set-cookie'])).toMatch(/^vc_instance=[0-9a-f]+; path=\//);
    await stillServed();
    expect((await api.patch(`/environments/${added.id}/edge`, { stickiness: false })).status).toBe(200);
    expect((await get(added.port)).headers['set-cookie']).toBeUndefined();
    await stillServed();

    // compression on: gzip; off: plain
    expect((await api.patch(`/projects/${project.id}/edge`, { compression: true })).status).toBe(200);
    const zipped = await get(added.port, { headers: { 'accept-encoding': 'gzip' } });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zlib.gunzipSync(zipped.body).toString()).toMatch(/^instance 2\n/);
    await stillServed();
    expect((await api.patch(`/projects/${project.id}/edge`, { compression: false })).status).toBe(200);
    expect((await get(added.port, { headers: { 'accept-encoding': 'gzip' } })).headers['content-encoding']).toBe(
      undefined,
    );
    await stillServed();

    // a rate-limit window no project had: 2 requests per 37 s, the third gets 429
    expect(
      (await api.patch(`/projects/${project.id}/edge`, { rate_limit: { requests: 2, per_seconds: 37 } })).status,
    ).toBe(200);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await get(added.port, { localAddress: '127.0.0.3' })).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect((await get(added.port, { localAddress: '127.0.0.4' })).status).toBe(200);
    expect((await api.patch(`/projects/${project.id}/edge`, { rate_limit: null })).status).toBe(200);
    expect((await get(added.port, { localAddress: '127.0.0.3' })).status).toBe(200);
    await stillServed();

    // a blocked list that appears (a network and an address inside it), then is emptied
    expect(
      (await api.patch(`/projects/${project.id}/edge`, { blocked_addresses: ['127.0.0.0/29', '127.0.0.5'] })).status,
    ).toBe(200);
    expect((await get(added.port, { localAddress: '127.0.0.5' })).status).toBe(403);
    expect((await get(added.port, { localAddress: '127.0.0.6' })).status).toBe(403);
    expect((await get(added.port, { localAddress: '127.0.0.9' })).status).toBe(200);
    expect((await api.patch(`/projects/${project.id}/edge`, { blocked_addresses: [] })).status).toBe(200);
    expect((await get(added.port, { localAddress: '127.0.0.5' })).status).toBe(200);
    await stillServed();

    // an allow list on the added environment only
    expect((await api.patch(`/environments/${added.id}/edge`, { allowed_addresses: ['127.0.0.7'] })).status).toBe(200);
    expect((await get(added.port, { localAddress: '127.0.0.7' })).status).toBe(200);
    expect((await get(added.port, { localAddress: '127.0.0.8' })).status).toBe(403);
    expect((await api.patch(`/environments/${added.id}/edge`, { allowed_addresses: [] })).status).toBe(200);
    await stillServed();

    // a maintenance page of the project's own (a map entry; Lua answers with it), with the note
    const page = '<html><body>\n<h1>Back soon</h1>\n<p>{{note}}</p>\n</body></html>\n';
    expect((await api.patch(`/projects/${project.id}/edge`, { pages: { maintenance: page } })).status).toBe(200);
    await t.deps
      .knex('environments')
      .where({ id: added.id })
      .update({ maintenance_on: true, maintenance_note: 'a & b' });
    await awaitEdges(t.deps.knex);
    const down = await get(added.port);
    expect(down.status).toBe(503);
    expect(down.headers['retry-after']).toBe('300');
    expect(down.body.toString()).toBe('<html><body>\n<h1>Back soon</h1>\n<p>a &amp; b</p>\n</body></html>\n');
    await t.deps.knex('environments').where({ id: added.id }).update({ maintenance_on: false });
    await awaitEdges(t.deps.knex);
    expect((await get(added.port)).status).toBe(200);
    await stillServed();

    // an error page of the project's own (pages.map; on a loopback hop, Lua puts it in place of HAProxy's own
    // 502/503/504), set, changed and cleared: here HAProxy's own 503 of an environment whose instance does not
    // listen. The kept environment is the project's too: its requests take the hop while the page is set.
    const dead = await createEnvironment(t, project, { name: 'dead' });
    await t.deps.knex('edge_routes').insert({ environment_id: dead.id, upstreams: route([1]) });
    await awaitEdges(t.deps.knex);
    const own = 'service unavailable: no web process is answering';
    expect((await get(dead.port)).body.toString()).toBe(own);
    for (const error of ['<p>something went wrong</p>\n', '<p>\tstill wrong: é</p>\r\n']) {
      expect((await api.patch(`/projects/${project.id}/edge`, { pages: { error } })).status).toBe(200);
      const page = await get(dead.port);
      expect(page.status).toBe(503);
      expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(page.body.toString()).toBe(error);
      await stillServed();
    }
    expect((await api.patch(`/projects/${project.id}/edge`, { pages: { error: null } })).status).toBe(200);
    const plain = await get(dead.port);
    expect([plain.status, plain.body.toString()]).toEqual([503, own]);
    await stillServed();

    // four instances where there was one: each of them answers
    await t.deps
      .knex('edge_routes')
      .where({ environment_id: added.id })
      .update({ upstreams: route(appPorts) });
    await awaitEdges(t.deps.knex);
    const seen = new Set<string>();
    for (let i = 0; i < 40 && seen.size < 4; i++) seen.add((await get(added.port)).body.toString().split('\n')[0]);
    expect([...seen].sort()).toEqual(['instance 1', 'instance 2', 'instance 3', 'instance 4']);
    await stillServed();

    // the environment removed: its port answers 404, the kept one is served on
    await t.deps.knex('edge_routes').where({ environment_id: added.id }).delete();
    await t.deps.knex('environments').where({ id: added.id }).delete();
    await awaitEdges(t.deps.knex);
    expect((await get(added.port)).status).toBe(404);
    await stillServed();

    expect(t.edge!.reloads()).toBe(reloadsBefore);
    expect(await masterReloads(paths)).toBe(masterBefore);
    client.socket.destroy();
  });
});
