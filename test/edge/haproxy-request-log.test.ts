/**
 * The request log on HAProxy (issue 18 item 5): a real HAProxy 2.6 run from edge/request-log/haproxy.ts's
 * fragment writes one line per request into its ring, which forwards to the shipper's reader; the
 * reader hands CONTRACT's lines to a real LogShipper that sends them to a real HTTP collector (the project's
 * destination, saved through the API).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  requestLogFrontend,
  requestLogGlobal,
  requestLogRules,
  requestLogSections,
} from '../../edge/request-log/haproxy';
import { requestLogPaths } from '../../edge/request-log/control';
import { RequestLogReader } from '../../logs/request-reader';
import { runtimeCommand } from '../../edge/runtime-command';
import { LogShipper } from '../../logs/shipper';
import { useTestContext } from '../helpers/context';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import {
  type ConfiguredHaproxy,
  DEFAULTS,
  request,
  startConfiguredHaproxy,
  startTinyApp,
} from '../helpers/haproxy-config';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { until } from '../helpers/until';

const t = useTestContext({ env: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' } });
let haproxy: ConfiguredHaproxy;
let app: Awaited<ReturnType<typeof startTinyApp>>;
let receiver: Receiver;
let shipper: LogShipper;
let reader: RequestLogReader;
let env: { id: string };
let socketPath: string;

/** Every line the collector got, parsed. */
const shipped = () =>
  receiver.received.flatMap((r) =>
    r.body
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>),
  );
const requests = () => shipped().filter((l) => l.type === 'request');
/** The shipper's reader, as processes/shipper-runtime.ts makes it (same socket, same cursor file each time). */
const startReader = () => {
  const paths = requestLogPaths(t.dataDir);
  return new RequestLogReader({
    socketPath: paths.socket,
    cursorFile: paths.cursorFile,
    sink: shipper,
    reorderMs: 300,
  }).start();
};
/**
 * Closes the reader, then waits until HAProxy has seen its connection go (the ring's forwarder, a session without a
 * protocol, holds no connection any more). A line logged before that is written into the closed connection and
 * lost, and counted dropped, as a shipper's crash loses what it had not read; these tests are about the lines
 * logged while nothing listens.
 */
const stopReader = async () => {
  await reader.close();
  await until(
    'HAProxy to see the reader go',
    async () => !/proto=\?[^\n]*scb=\[[^\]]*fd=\d/.test(await runtimeCommand(haproxy.socket, 'show sess')),
  );
};

beforeAll(async () => {
  const user = await createUser(t);
  const team = await createTeam(t, user);
  const project = await createProject(t, team);
  env = await createEnvironment(t, project, { name: 'logged' });
  receiver = await startReceiver(0, '/ingest');
  const owner = await sessionAgent(t, user);
  const saved = await owner.post(`/projects/${project.id}/logs`, {
    destination: { kind: 'http', name: 'collector', url: receiver.url },
  });
  expect(saved.status, saved.text).toBe(200);
  expect(saved.body.can_send).toBe(true);
  receiver.received.length = 0; // the test send

  shipper = await new LogShipper({
    knex: t.deps.knex,
    secrets: t.deps.secrets,
    outbound: t.deps.config,
    dataDir: t.dataDir,
    source: 'requests',
    flushMs: 200,
    refreshMs: 1000,
  }).start();
  reader = await startReader();
  socketPath = requestLogPaths(t.dataDir).socket;
  app = await startTinyApp();
  haproxy = await startConfiguredHaproxy(({ port, socket }) =>
    [
      'global',
      `  stats socket ${socket} level admin`,
      ...requestLogGlobal().map((l) => `  ${l}`),
      ...DEFAULTS,
      ...requestLogSections({ socket: socketPath, ringSize: 65_536 }),
      'frontend web',
      `  bind 127.0.0.1:${port}`,
      ...requestLogFrontend().map((l) => `  ${l}`),
      `  http-request set-var(txn.env) str(${env.id}) if { req.hdr(host) -m str logged.test }`,
      '  http-request set-var(txn.client) src',
      ...requestLogRules().map((l) => `  ${l}`),
      '  http-request deny deny_status 403 if { path_beg /forbidden }',
      '  http-request return status 429 hdr Retry-After 7 if { path_beg /limited }',
      '  default_backend app',
      'backend app',
      `  server app 127.0.0.1:${app.port}`,
      '',
    ].join('\n'),
  );
}, 60_000);

afterAll(async () => {
  await haproxy?.stop();
  await reader?.close();
  await shipper?.close();
  await app?.close();
  await receiver?.stop();
});

const get = (path: string, o: { from?: string; headers?: Record<string, string>; method?: string } = {}) =>
  request(haproxy.port, { host: 'logged.test', path, ...o });

describe('the request log from HAProxy', () => {
  it("ships one line per request with CONTRACT's fields; a user agent with quotes and backslashes stays JSON", async () => {
    const ua = 'Tester/2.0 "quoted" \\back\\slash\\/ é\t1';
    // node:http sends a header value as latin1: the UTF-8 bytes a browser would send
    const sent = Buffer.from(ua, 'utf8').toString('latin1');
    const res = await get('/hello/world?token=secret', { from: '127.0.0.7', headers: { 'user-agent': sent } });
    expect(res.status).toBe(200);
    const line = await until('the line', () => requests().find((l) => l.path === '/hello/world'));
    expect(Object.keys(line).sort()).toEqual(
      [
        'bytes',
        'client_address',
        'duration_ms',
        'environment_id',
        'method',
        'path',
        'status',
        'time',
        'type',
        'user_agent',
      ].sort(),
    );
    expect(line).toMatchObject({
      environment_id: env.id,
      type: 'request',
      method: 'GET',
      status: 200,
      client_address: '127.0.0.7',
      user_agent: ua,
    });
    expect(line.bytes).toBeGreaterThan('app /hello/world?token=secret'.length);
    expect(line.duration_ms).toBeGreaterThanOrEqual(0);
    expect(Math.abs(Date.parse(String(line.time)) - Date.now())).toBeLessThan(60_000);
    expect(JSON.stringify(shipped())).not.toContain('token=secret');
    // as sent: a slash is a slash (HAProxy's JSON writes `\/`), an escaped backslash before a slash stays one
    const raw = receiver.received.map((r) => r.body).join('');
    expect(raw).toContain('"path":"/hello/world"');
    expect(raw).toContain('"user_agent":"Tester/2.0 \\"quoted\\" \\\\back\\\\slash\\\\/ ');
    // No User-Agent at all: null, not an empty string.
    await request(haproxy.port, { host: 'logged.test', path: '/none' });
    const none = await until('the line without an agent', () => requests().find((l) => l.path === '/none'));
    expect(none.user_agent).toBeNull();
  });

  it('the longest line: the method cut at 64 bytes, the path at 2048, a user agent of quotes at 512; still JSON', async () => {
    // a method no app knows (Node's server refuses it): the edge's own 403 answers it, and logs it
    const method = `LONG${'X'.repeat(196)}`;
    const path = `/forbidden/${'p'.repeat(3000)}`;
    const res = await get(path, { method, headers: { 'user-agent': `"\\${'"'.repeat(998)}` } });
    expect(res.status).toBe(403);
    const line = await until('the long line', () => requests().find((l) => String(l.path).startsWith('/forbidden/p')));
    expect([line.method, line.path, line.user_agent]).toEqual([
      method.slice(0, 64),
      path.slice(0, 2048),
      `"\\${'"'.repeat(510)}`,
    ]);
  });

  it('logs requests refused by rules (403, 429) and upgrade requests', async () => {
    expect((await get('/forbidden/x')).status).toBe(403);
    expect((await get('/limited')).status).toBe(429);
    const up = await get('/socket', {
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        'sec-websocket-version': '13',
      },
    });
    expect(up.status).toBe(200);
    const lines = await until('the refused and upgrade lines', () => {
      const l = requests();
      const want = ['/forbidden/x', '/limited', '/socket'].map((p) => l.find((x) => x.path === p));
      return want.every(Boolean) ? want : undefined;
    });
    expect(lines.map((l) => l!.status)).toEqual([403, 429, 200]);
  });

  it('gets the lines logged while the reader was down once it is back, each once', async () => {
    await stopReader();
    for (let i = 0; i < 5; i++) expect((await get(`/while-down/${i}`)).status).toBe(200);
    reader = await startReader();
    const whileDown = () => requests().filter((l) => String(l.path).startsWith('/while-down/'));
    await until('the 5 lines', () => whileDown().length === 5, {
      detail: () =>
        `arrived: ${JSON.stringify(whileDown().map((l) => l.path))}; reader ${JSON.stringify(reader.counts)}`,
    });
    await new Promise((r) => setTimeout(r, 800));
    const paths = requests().map((l) => l.path);
    expect(new Set(paths).size).toBe(paths.length); // every path of this file is used once
    expect(reader.counts.dropped).toBe(0);
  });

  it('keeps shipping across a hitless reload (SIGUSR2): a new epoch, nothing counted as dropped', async () => {
    const dropped = reader.counts.dropped;
    expect((await get('/before-reload')).status).toBe(200);
    process.kill(haproxy.pid, 'SIGUSR2');
    await until('the reload', () => /Loading success[\s\S]*Loading success/.test(haproxy.output()));
    expect((await get('/after-reload')).status).toBe(200);
    await until('both lines', () =>
      ['/before-reload', '/after-reload'].every((p) => requests().some((l) => l.path === p)),
    );
    await new Promise((r) => setTimeout(r, 800));
    expect(reader.counts.dropped).toBe(dropped);
    // the old worker's ring connection does not keep it alive: it leaves
    let proc = '';
    for (let i = 0; i < 100; i++) {
      proc = await runtimeCommand(haproxy.master, 'show proc');
      if (!/# old workers\n\d/.test(proc)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(proc).toContain('# workers');
    expect(proc).not.toMatch(/# old workers\n\d/);
  });

  it('counts the lines the ring could not keep in the dropped line', async () => {
    await stopReader();
    const before = requests().length;
    const n = 600; // the 64 KiB ring holds a few hundred lines
    for (let i = 0; i < n; i++) await get(`/overflow/${i}`);
    reader = await startReader();
    // HAProxy's ring keeps the lines its forwarder has not sent, so a full ring loses the new ones until the
    // forwarder is connected again and has sent what it held: requests go on until one after the overflow
    // arrives (each one shipped or counted, like the rest)
    let after = 0;
    await until(
      'a line after the overflow',
      async () => {
        after += 1;
        await get(`/after-overflow/${after}`);
        await new Promise((r) => setTimeout(r, 250));
        return requests().some((l) => String(l.path).startsWith('/after-overflow/'));
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const droppedTotal = () =>
      shipped()
        .filter((l) => l.type === 'dropped')
        .reduce((s, l) => s + Number(l.dropped), 0);
    const dropped = await until('a dropped line', () => droppedTotal() || undefined);
    // a gap stays open a moment (another thread may write its line late) before it is counted: requests go on
    // until every line made is shipped or counted
    const arrived = () => requests().length - before;
    await until(
      'every line made shipped or counted',
      async () => {
        if (arrived() + droppedTotal() === n + after) return true;
        after += 1;
        await get(`/after-overflow/${after}`);
        await new Promise((r) => setTimeout(r, 500));
        return false;
      },
      {
        timeoutMs: 30_000,
        intervalMs: 100,
        detail: () =>
          `made ${n + after}, arrived ${arrived()}, counted dropped ${droppedTotal()}; reader ${JSON.stringify(reader.counts)}`,
      },
    );
    await new Promise((r) => setTimeout(r, 1000));
    expect(dropped).toBeGreaterThan(0);
    expect(arrived() + droppedTotal()).toBe(n + after);
    expect(arrived()).toBeLessThan(n + after);
  });
});
