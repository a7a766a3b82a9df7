/**
 * A project's error page (CONTRACT "The edge": it replaces the answer when no web process can answer), served
 * from pages.map by the edge's Lua (edge/haproxy/pages.ts) on a loopback hop (edge/haproxy/hops.ts), byte for
 * byte (line feeds, CR LF, a tab, non-ASCII), with the status HAProxy gave, `text/html; charset=utf-8` and
 * `Cache-Control: no-store`: HAProxy's own 503 when no instance answers, its 502 when the app closes the
 * connection without answering, the 503 "no release is live"; through compression and the CDN tier too; a page
 * that fits one reply (the action) and one larger than a buffer (streamed by the filter). An app's own 503
 * passes unchanged, the marker header of HAProxy's own errors never reaches a client, and each request gives
 * one request line with the status the client got.
 */
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPLY_MAX_BYTES } from '../../edge/haproxy/pages';
import { awaitEdges } from '../../db/queries/edge-routes';
import { useTestContext } from '../helpers/context';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import type { Agent } from '../helpers/http';
import { type Receiver, startReceiver } from '../helpers/receiver';
import { until } from '../helpers/until';

const t = useTestContext({ edge: true, env: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' } });
let app: http.Server;
let owner: Agent;
let project: { id: string; team_id: string };
let receiver: Receiver;
/** The app's upgraded connections (the server no longer tracks them). */
const upgraded: Duplex[] = [];
/** live: the app; dead: an instance that does not listen (HAProxy's own 503); idle: no release is live. */
const envs: Record<'live' | 'dead' | 'idle', { id: string; port: number }> = {} as never;

const SMALL = '<!doctype html>\n<title>Oops</title>\r\n<p>\tSomething broke: é, €, 😀.</p>\n\u0001';
/** Larger than one reply, and than HAProxy's buffer (32 KiB): streamed. */
const BIG = `<!doctype html>\n${'<p>\tpage\r\n€ 😀</p>\n'.repeat(3000)}`;

beforeAll(async () => {
  expect(Buffer.byteLength(SMALL)).toBeLessThanOrEqual(REPLY_MAX_BYTES);
  expect(Buffer.byteLength(BIG)).toBeGreaterThan(2 * 32_768);
  app = http.createServer((req, res) => {
    if (req.url?.startsWith('/close')) return req.socket.destroy();
    if (req.url?.startsWith('/forwarded')) {
      const h = req.headers;
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify([h['x-forwarded-for'], h['x-forwarded-proto'], h['x-forwarded-host']]));
    }
    if (req.url?.startsWith('/own503')) {
      // with the marker of HAProxy's own errors, forged: the app's answer is still its own
      res.writeHead(503, { 'content-type': 'text/plain', 'x-app': 'own', 'x-vc-edge-error': '1' });
      return res.end('the app is busy\n');
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('hello\n');
  });
  app.on('upgrade', (_req, socket) => {
    upgraded.push(socket);
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        'Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n',
    );
    socket.on('data', (d) => socket.write(d));
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  const appPort = (app.address() as { port: number }).port;

  const user = await createUser(t);
  project = await createProject(t, await createTeam(t, user));
  owner = await sessionAgent(t, user);
  for (const name of ['live', 'dead', 'idle'] as const) envs[name] = await createEnvironment(t, project, { name });
  const route = (port: number) => JSON.stringify([{ id: '1', host: '127.0.0.1', port }]);
  await t.deps.knex('edge_routes').insert([
    { environment_id: envs.live.id, upstreams: route(appPort) },
    // nothing listens on port 1: the connection is refused, the instance marked down
    { environment_id: envs.dead.id, upstreams: route(1) },
  ]);
  receiver = await startReceiver(0, '/ingest');
  const logs = await owner.post(`/projects/${project.id}/logs`, {
    destination: { kind: 'http', name: 'collector', url: receiver.url },
  });
  expect(logs.status, logs.text).toBe(200);
  await awaitEdges(t.deps.knex);
}, 60_000);
afterAll(async () => {
  for (const socket of upgraded) socket.destroy();
  app?.closeAllConnections();
  await new Promise((r) => app?.close(r));
  await receiver?.stop();
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function request(
  port: number,
  path: string,
  o: { method?: string; headers?: Record<string, string>; localAddress?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const { method = 'GET', headers, localAddress } = o;
    const req = http.request({ host: '127.0.0.1', port, path, method, headers, localAddress, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function setPage(error: string | null) {
  const saved = await owner.patch(`/projects/${project.id}/edge`, { pages: { error } });
  expect(saved.status, saved.text).toBe(200);
}

/** The project's page, whole, in place of an answer with `status`. */
function expectPage(res: Answer, status: number, page: string) {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers['x-vc-edge-error']).toBeUndefined();
  expect(res.headers['content-length']).toBe(String(Buffer.byteLength(page)));
  expect(res.body.equals(Buffer.from(page, 'utf8'))).toBe(true);
}

/** The app's own 503 and its 200, unchanged. */
async function expectAppAnswers() {
  const own = await request(envs.live.port, '/own503');
  expect([own.status, own.headers['content-type'], own.headers['x-app'], own.body.toString()]).toEqual([
    503,
    'text/plain',
    'own',
    'the app is busy\n',
  ]);
  expect(own.headers['x-vc-edge-error']).toBeUndefined();
  expect((await request(envs.live.port, '/')).body.toString()).toBe('hello\n');
  // the edge's X-Forwarded-*, the client's own removed, whichever pass the request took
  const forwarded = await request(envs.live.port, '/forwarded', {
    headers: { 'x-forwarded-for': '6.6.6.6', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.example' },
  });
  expect(JSON.parse(forwarded.body.toString())).toEqual(['127.0.0.1', 'http', `127.0.0.1:${envs.live.port}`]);
}

/** An upgrade (WebSocket) on `port`: the app's 101, then its echo. */
function upgrade(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () =>
      socket.write(
        'GET /socket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
      ),
    );
    let got = '';
    socket.on('data', (d) => {
      got += d.toString();
      if (got.includes('\r\n\r\n') && !got.endsWith('ping')) socket.write('ping');
      if (got.endsWith('ping')) {
        socket.destroy();
        resolve(`${got.split('\r\n')[0]} ${got.slice(-4)}`);
      }
    });
    socket.on('error', reject);
    setTimeout(() => reject(new Error(`no echo: ${JSON.stringify(got)}`)), 5000);
  });
}

/** Every answer the page replaces, as the client gets it (GET and HEAD). */
async function expectPageEverywhere(page: string) {
  expectPage(await request(envs.live.port, '/close'), 502, page);
  expectPage(await request(envs.dead.port, '/'), 503, page);
  expectPage(await request(envs.idle.port, '/'), 503, page);
  for (const port of [envs.live.port, envs.idle.port]) {
    const head = await request(port, '/close', { method: 'HEAD' });
    expect([head.headers['content-type'], head.body.length]).toEqual(['text/html; charset=utf-8', 0]);
  }
  await expectAppAnswers();
}

describe("a project's error page", () => {
  it('without one, HAProxy answers in plain text, and its marker never reaches the client', async () => {
    const closed = await request(envs.live.port, '/close');
    expect([closed.status, closed.headers['content-type'], closed.body.toString()]).toEqual([
      502,
      'text/plain; charset=utf-8',
      'bad gateway: the web process is not answering',
    ]);
    expect(closed.headers['x-vc-edge-error']).toBeUndefined();
    const dead = await request(envs.dead.port, '/');
    expect([dead.status, dead.headers['x-vc-edge-error']]).toEqual([503, undefined]);
    const idle = await request(envs.idle.port, '/');
    expect([idle.status, idle.body.toString()]).toEqual([503, 'no release is live']);
    await expectAppAnswers();
  });

  it('one that fits one reply replaces the 502, both 503s, and HEAD answers; the app’s own 503 passes', async () => {
    await setPage(SMALL);
    await expectPageEverywhere(SMALL);
  });

  it('at the one-reply limit and a byte past it: each answered whole (the reply, then the stream)', async () => {
    const at = `<!doctype html>\n${'x'.repeat(REPLY_MAX_BYTES - 16)}`;
    expect(Buffer.byteLength(at)).toBe(REPLY_MAX_BYTES);
    for (const page of [at, `${at}y`]) {
      await setPage(page);
      await expectPageEverywhere(page);
    }
  });

  it('one larger than a buffer is streamed whole, for the same answers', async () => {
    await setPage(BIG);
    await expectPageEverywhere(BIG);
  });

  it('through compression (gzip accepted) and the CDN tier', async () => {
    const gzip = { 'accept-encoding': 'gzip' };
    try {
      for (const page of [SMALL, BIG]) {
        await setPage(page);
        expect((await owner.patch(`/projects/${project.id}/edge`, { compression: true })).status).toBe(200);
        expectPage(await request(envs.live.port, '/close', { headers: gzip }), 502, page);
        expectPage(await request(envs.dead.port, '/', { headers: gzip }), 503, page);
        await expectAppAnswers();
        for (const compression of [true, false]) {
          expect((await owner.patch(`/projects/${project.id}/edge`, { compression })).status).toBe(200);
          const cdn = await owner.patch(`/environments/${envs.live.id}/cdn`, { enabled: true });
          expect(cdn.status, cdn.text).toBe(200);
          // through Varnish (X-Cache), whose miss HAProxy's loopback listener answers
          expect((await request(envs.live.port, '/via-cdn', { headers: gzip })).headers['x-cache']).toBe('MISS');
          expectPage(await request(envs.live.port, '/close', { headers: gzip }), 502, page);
          await expectAppAnswers();
          expect((await owner.patch(`/environments/${envs.live.id}/cdn`, { enabled: false })).status).toBe(200);
        }
      }
    } finally {
      await owner.patch(`/projects/${project.id}/edge`, { compression: false });
      await owner.patch(`/environments/${envs.live.id}/cdn`, { enabled: false });
    }
  });

  it('on the hop, the rest is as without a page: the rate limit counts each request once, stickiness, an upgrade', async () => {
    const projectEdge = `/projects/${project.id}/edge`;
    const envEdge = `/environments/${envs.live.id}/edge`;
    try {
      for (const page of [SMALL, BIG]) {
        await setPage(page);
        const client = page === SMALL ? '127.0.0.7' : '127.0.0.8';
        const limited = await owner.patch(projectEdge, { rate_limit: { requests: 4, per_seconds: 60 } });
        expect(limited.status, limited.text).toBe(200);
        const statuses = [];
        for (let i = 0; i < 5; i++)
          statuses.push((await request(envs.live.port, '/', { localAddress: client })).status);
        expect(statuses).toEqual([200, 200, 200, 200, 429]);
        expect((await owner.patch(projectEdge, { rate_limit: null })).status).toBe(200);
        expect((await owner.patch(envEdge, { stickiness: true })).status).toBe(200);
        expect(String((await request(envs.live.port, '/')).headers['set-cookie'])).toMatch(/^vc_instance=[0-9a-f]+;/);
        expect((await owner.patch(envEdge, { stickiness: false })).status).toBe(200);
        expect(await upgrade(envs.live.port)).toBe('HTTP/1.1 101 Switching Protocols ping');
      }
    } finally {
      await owner.patch(projectEdge, { rate_limit: null });
      await owner.patch(envEdge, { stickiness: false });
    }
  });

  it('each request gives one request line, with the status the client got', async () => {
    const asked: [number, string, number][] = [
      [envs.live.port, '/close/logged', 502],
      [envs.live.port, '/own503/logged', 503],
      [envs.live.port, '/logged', 200],
      [envs.dead.port, '/logged-dead', 503],
      [envs.idle.port, '/logged-idle', 503],
    ];
    for (const page of [SMALL, BIG]) {
      await setPage(page);
      const tag = page === SMALL ? 'small' : 'big';
      for (const [port, path, status] of asked) expect((await request(port, `${path}/${tag}`)).status).toBe(status);
    }
    const lines = () =>
      receiver.received
        .flatMap((r) => r.body.split('\n').filter(Boolean))
        .map((l) => JSON.parse(l) as { type: string; path: string; status: number })
        .filter((l) => l.type === 'request' && l.path.includes('logged'));
    await until('the request lines', lines, (l) => l.length >= asked.length * 2, { timeoutMs: 30_000 });
    await new Promise((r) => setTimeout(r, 1500)); // a second line, if any, would have come by now
    const got = lines()
      .map((l) => `${l.path} ${l.status}`)
      .sort();
    const want = ['small', 'big'].flatMap((tag) => asked.map(([, path, status]) => `${path}/${tag} ${status}`));
    expect(got).toEqual(want.sort());
  });

  it('cleared: HAProxy answers in plain text again', async () => {
    await setPage(null);
    const closed = await request(envs.live.port, '/close');
    expect([closed.status, closed.headers['content-type']]).toEqual([502, 'text/plain; charset=utf-8']);
    const idle = await request(envs.idle.port, '/');
    expect([idle.status, idle.body.toString()]).toEqual([503, 'no release is live']);
  });
});
