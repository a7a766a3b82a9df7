/**
 * Log shipping through the real stack (CONTRACT "Logs"): requests through the edge reach a real HTTP
 * collector as NDJSON lines with the contract's fields (no query string), refused and upgrade requests
 * too (HAProxy writes the lines: edge/request-log/), a deployed web process's stderr
 * line reaches it, lines made while the collector is down arrive once it is up again (retry), a syslog
 * destination gets RFC 5424 lines, machines keep their own day files and delete those older than
 * keep_days_on_machine, and a shipper's queue is bounded (the oldest dropped and counted).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { destinationColumns } from '../../db/queries/log-settings';
import { LogShipper } from '../../logs/shipper';
import { logsDir, machineFile } from '../../logs/machine-files';
import { useTestContext } from '../helpers/context';
import { commitServer, createDeployWorld, runTaskOk } from '../helpers/deploy-fixtures';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { requestUntilMessage, saveSyslogDestination, startSyslog } from '../helpers/syslog';
import { sessionAgent } from '../helpers/fixtures';
import type { Agent } from '../helpers/http';
import { until } from '../helpers/until';
import { createEnvironmentMachines } from '../../api/machines/service';

const t = useTestContext({ worker: true, env: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' } });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let receiver: Receiver;
/** The logs routes take a session (auth: session), not a token. */
let owner: Agent;

/** The app of the deploy fixtures, plus: GET /fail writes a line to stderr (and answers 500). */
const SERVER_JS = `
const http = require('node:http');
http.createServer((req, res) => {
  if (req.url === '/healthz') { res.writeHead(200); return res.end('ok'); }
  if (req.url.startsWith('/fail')) {
    console.error('boom: the handler failed for ' + req.url.split('?')[0]);
    res.writeHead(500); return res.end('failed');
  }
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end('hello from the app');
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

beforeAll(async () => {
  w = await createDeployWorld(t);
  commitServer(w.repo, SERVER_JS, 'stderr app');
  owner = await sessionAgent(t, w.owner);
  await t.deps.knex.transaction((trx) => createEnvironmentMachines(trx, t.deps, w.environment));
  receiver = await startReceiver(0, '/ingest');
  const saved = await owner.post(`/projects/${w.project.id}/logs`, {
    destination: { kind: 'http', name: 'collector', url: receiver.url },
  });
  expect(saved.status, saved.text).toBe(200);
  expect(saved.body.can_send).toBe(true);
  await runTaskOk(t, w.api, `/environments/${w.environment.id}/deploy`, undefined, 90_000);
}, 150_000);
afterAll(async () => {
  await receiver?.stop();
});

/** An NDJSON line as shipped: the fields the tests read are strings; the rest is compared whole. */
type Line = { type?: string; path?: string; message?: string; [field: string]: unknown };

/**
 * The batches the receiver got that hold a line `mine` picks, each as its lines: a test's own shipper's, when the
 * worker's shipper sends the environment's other lines (its app's, a late request's) to the same destination.
 */
function batchesWith(r: Receiver, mine: (l: Line) => boolean): Line[][] {
  return r.received
    .map((x) =>
      x.body
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Line),
    )
    .filter((batch) => batch.some(mine));
}

/** Every NDJSON line the receiver got (in order). */
function lines(r: Receiver): Line[] {
  return r.received.flatMap((x) =>
    x.body
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l)),
  );
}

function waitForLine(r: Receiver, pred: (l: Line) => boolean, timeoutMs = 30_000): Promise<Line> {
  return until('such a line', () => lines(r).find(pred), {
    timeoutMs,
    detail: () => `got ${JSON.stringify(lines(r)).slice(0, 2000)}`,
  });
}

const get = (p: string, headers: Record<string, string> = {}) =>
  fetch(`http://127.0.0.1:${w.environment.port}${p}`, { headers });

describe('shipping the edge request log', () => {
  it('sends each request through the edge as an NDJSON line with the fields, without the query string', async () => {
    const res = await get('/reports/42?token=very-secret-token', {
      'user-agent': 'log-test-agent/1.0',
      authorization: 'Bearer not-to-be-logged',
    });
    expect(res.status).toBe(200);
    const body = await res.text();
    const line = await waitForLine(receiver, (l) => l.type === 'request' && l.path === '/reports/42');
    expect(line).toEqual({
      time: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      environment_id: w.environment.id,
      type: 'request',
      method: 'GET',
      path: '/reports/42',
      status: 200,
      bytes: expect.any(Number),
      duration_ms: expect.any(Number),
      client_address: expect.stringMatching(/127\.0\.0\.1$/),
      user_agent: 'log-test-agent/1.0',
    });
    // what was sent to the client: the status line and headers, then the body
    expect(line.bytes).toBeGreaterThan(Buffer.byteLength(body));
    const got = receiver.received.find((x) => x.body.includes('/reports/42'))!;
    expect(got.headers['content-type']).toBe('application/x-ndjson');
    const all = receiver.received.map((x) => x.body).join('');
    expect(all).not.toContain('very-secret-token');
    expect(all).not.toContain('not-to-be-logged');

    // the machine's own copy, per environment per day
    const today = new Date().toISOString().slice(0, 10);
    const file = machineFile(t.dataDir, w.environment.id, 'requests', today);
    await expect.poll(() => existsSync(file) && readFileSync(file, 'utf8').includes('/reports/42')).toBe(true);
    expect(readFileSync(file, 'utf8')).not.toContain('very-secret-token');
  });

  it('sends a line for a request a rule refused and for an upgrade request too', async () => {
    const edge = await owner.patch(`/projects/${w.project.id}/edge`, { blocked_user_agents: ['refusedbot'] });
    expect(edge.status, edge.text).toBe(200);
    await t.edge!.reload();
    const refused = await get('/refused/1', { 'user-agent': 'RefusedBot/2' });
    expect(refused.status).toBe(403);
    await owner.patch(`/projects/${w.project.id}/edge`, { blocked_user_agents: [] });
    await t.edge!.reload();
    // a WebSocket handshake the app does not take up: the app's answer, logged like any other
    const upgrade = await new Promise<number>((resolve, reject) => {
      const req = http.request({
        host: '127.0.0.1',
        port: w.environment.port,
        path: '/socket',
        headers: {
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
          'sec-websocket-version': '13',
          'user-agent': 'upgrade-test/1',
        },
        agent: false,
      });
      // the line is written when the connection ends (an upgraded one may last long)
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => req.destroy());
        resolve(res.statusCode ?? 0);
      });
      req.on('upgrade', (res, socket) => {
        socket.destroy();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    const refusedLine = await waitForLine(receiver, (l) => l.type === 'request' && l.path === '/refused/1');
    expect(refusedLine).toMatchObject({ status: 403, method: 'GET', user_agent: 'RefusedBot/2' });
    expect(upgrade).toBe(200); // the app does not take the upgrade up
    const upgradeLine = await waitForLine(receiver, (l) => l.type === 'request' && l.path === '/socket');
    expect(upgradeLine).toMatchObject({ status: upgrade, method: 'GET', user_agent: 'upgrade-test/1' });
  });

  it("sends the web process's stderr line", async () => {
    const res = await get('/fail/now?x=1');
    expect(res.status).toBe(500);
    const line = await waitForLine(receiver, (l) => l.type === 'stderr' && /boom/.test(l.message ?? ''));
    expect(line).toMatchObject({
      environment_id: w.environment.id,
      message: 'boom: the handler failed for /fail/now',
      time: expect.any(String),
    });
    const today = new Date().toISOString().slice(0, 10);
    const file = machineFile(t.dataDir, w.environment.id, 'errors', today);
    await expect.poll(() => existsSync(file) && readFileSync(file, 'utf8').includes('boom')).toBe(true);
  });

  it('keeps lines while the collector is down and delivers them when it is back (retry)', async () => {
    const port = receiver.port;
    await receiver.stop();
    for (let i = 0; i < 3; i++) expect((await get(`/while-down/${i}`)).status).toBe(200);
    // a send was tried and failed: the project's last_error says so
    await expect
      .poll(
        async () => (await t.deps.knex('project_log_settings').where({ project_id: w.project.id }).first()).last_error,
        {
          timeout: 20_000,
          interval: 200,
        },
      )
      .toBe('the connection was refused');
    receiver = await startReceiver(port, '/ingest');
    for (let i = 0; i < 3; i++) await waitForLine(receiver, (l) => l.path === `/while-down/${i}`, 30_000);
    await expect
      .poll(
        async () => (await t.deps.knex('project_log_settings').where({ project_id: w.project.id }).first()).last_error,
        {
          timeout: 10_000,
          interval: 200,
        },
      )
      .toBeNull();
  });
});

describe('syslog destination', () => {
  it('gets request lines as RFC 5424 messages over tcp', async () => {
    const tcp = await startSyslog('tcp');
    try {
      await saveSyslogDestination(owner, w.project.id, tcp);
      // the edge re-reads destinations every second in tests; keep requesting until one goes to syslog
      const msg = await requestUntilMessage(
        tcp,
        (m) => m.includes('/to-syslog'),
        () => get('/to-syslog'),
        { timeoutMs: 20_000, intervalMs: 300 },
      );
      expect(msg).toMatch(
        new RegExp(`^<134>1 \\S+ \\S+ edge - request \\[vc@32473 environment_id="${w.environment.id}"\\] \\{`),
      );
      expect(JSON.parse(msg.slice(msg.indexOf('{')))).toMatchObject({ path: '/to-syslog', status: 200 });
    } finally {
      await owner.post(`/projects/${w.project.id}/logs`, {
        destination: { kind: 'http', name: 'collector', url: receiver.url },
      });
      await tcp.stop();
    }
  });
});

describe('keep_days_on_machine', () => {
  it("deletes the machine's day files older than the days kept", async () => {
    const dir = logsDir(t.dataDir, w.environment.id);
    mkdirSync(dir, { recursive: true });
    const day = (ago: number) => new Date(Date.now() - ago * 86_400_000).toISOString().slice(0, 10);
    const old = machineFile(t.dataDir, w.environment.id, 'requests', day(10));
    const oldErrors = machineFile(t.dataDir, w.environment.id, 'errors', day(3));
    const recent = machineFile(t.dataDir, w.environment.id, 'requests', day(2));
    for (const f of [old, oldErrors, recent]) writeFileSync(f, '{"old":true}\n');
    const res = await owner.post(`/projects/${w.project.id}/logs`, { keep_days_on_machine: 3 });
    expect(res.status, res.text).toBe(200);
    expect(res.body.keep_days_on_machine).toBe(3);
    const env = await owner.get(`/environments/${w.environment.id}/logs`);
    expect(env.body.machines.map((m: { keeps_days: number }) => m.keeps_days)).toEqual([3]);
    // the edge's shipper sees the new setting and sweeps at its next write
    const end = Date.now() + 20_000;
    while (existsSync(old) && Date.now() < end) {
      await get('/sweep');
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(existsSync(old)).toBe(false);
    expect(existsSync(oldErrors)).toBe(false);
    expect(existsSync(recent)).toBe(true);
  });
});

/** The project's http destination set in the database (what a save writes), for a shipper of the test's own. */
const setDestination = (name: string, url: string) =>
  t.deps
    .knex('project_log_settings')
    .where({ project_id: w.project.id })
    .update({ url_sealed: destinationColumns(t.deps.secrets, w.project.id, { kind: 'http', name, url }).url_sealed });

/** A shipper of the test's own (source `test`), with `o` over its defaults. */
const testShipper = (o: { flushMs?: number; batchMax?: number; maxQueued?: number; maxQueuedBytes?: number }) =>
  new LogShipper({
    knex: t.deps.knex,
    secrets: t.deps.secrets,
    outbound: t.deps.config,
    dataDir: t.dataDir,
    source: 'test',
    flushMs: 100,
    maxBackoffMs: 500,
    ...o,
  }).start();

/** A shipper whose project's destination is a port nobody listens on (yet), bounded as `bounds` say. */
async function shipperToNowhere(bounds: { maxQueued?: number; maxQueuedBytes?: number }) {
  const down = await startReceiver(0, '/ingest');
  const port = down.port;
  await down.stop();
  await setDestination('bounded', `http://127.0.0.1:${port}/ingest`);
  return { port, shipper: await testShipper(bounds) };
}

/** The project's destination back to the file's collector. */
const restoreCollector = () =>
  owner.post(`/projects/${w.project.id}/logs`, {
    destination: { kind: 'http', name: 'collector', url: receiver.url },
  });

describe('the shipper', () => {
  it('bounds its queue: the oldest lines are dropped, counted, and the count is sent first', async () => {
    const { port, shipper } = await shipperToNowhere({ maxQueued: 5 });
    try {
      for (let i = 0; i < 12; i++)
        shipper.push({ time: new Date().toISOString(), environment_id: w.environment.id, type: 'request', n: i });
      expect(shipper.queued(w.environment.id)).toEqual({ lines: 5, dropped: 7 });
      const back = await startReceiver(port, '/ingest');
      try {
        const mine = (l: Line) => l.n !== undefined;
        const [got] = await until(
          'its batch',
          () => batchesWith(back, mine),
          (b) => b.length > 0,
        );
        expect(got[0]).toMatchObject({ type: 'dropped', dropped: 7 });
        expect(got.slice(1).map((l) => l.n)).toEqual([7, 8, 9, 10, 11]);
      } finally {
        await back.stop();
      }
    } finally {
      await shipper.close();
      await restoreCollector();
    }
  });

  it('sends a full batch at once, without waiting for the next flush', async () => {
    const collector = await startReceiver(0, '/ingest');
    await setDestination('batches', collector.url);
    // no flush within the test: only a full batch (20 lines) is sent
    const shipper = await testShipper({ flushMs: 600_000, batchMax: 20 });
    const line = (n: number) => ({ time: new Date().toISOString(), environment_id: w.environment.id, type: 'x', n });
    // this shipper's batches only: the worker's own shipper sends the environment's lines (its app's, a late
    // request's) to the same destination at its own flushes
    const batches = () => batchesWith(collector, (l) => l.type === 'x');
    try {
      await shipper.refresh();
      for (let i = 0; i < 19; i++) shipper.push(line(i));
      await new Promise((r) => setTimeout(r, 1000));
      expect(batches()).toHaveLength(0);
      for (let i = 19; i < 45; i++) shipper.push(line(i));
      // the 20th line starts the send, which then takes what came meanwhile, batch after batch
      await until('three batches', batches, (b) => b.length === 3);
      expect(batches().map((b) => b.length)).toEqual([20, 20, 5]);
      expect(
        lines(collector)
          .filter((l) => l.type === 'x')
          .map((l) => l.n),
      ).toEqual([...Array(45).keys()]);
      expect(shipper.queued(w.environment.id)).toEqual({ lines: 0, dropped: 0 });
    } finally {
      await shipper.close();
      await collector.stop();
      await restoreCollector();
    }
  });

  it('bounds its queue in bytes too: long error lines past maxQueuedBytes drop the oldest, counted', async () => {
    const { port, shipper } = await shipperToNowhere({ maxQueuedBytes: 64 * 1024 });
    try {
      // 16 KiB lines, the longest a web process's error line gets: 64 KiB hold three of them
      for (let i = 0; i < 10; i++)
        shipper.push({
          time: new Date().toISOString(),
          environment_id: w.environment.id,
          type: 'stderr',
          message: `${i} ${'x'.repeat(16 * 1024 - 10)}`,
        });
      expect(shipper.queued(w.environment.id)).toEqual({ lines: 3, dropped: 7 });
      const back = await startReceiver(port, '/ingest');
      try {
        const mine = (l: Line) => String(l.message).endsWith('x'.repeat(64));
        const [got] = await until(
          'its batch',
          () => batchesWith(back, mine),
          (b) => b.length > 0,
        );
        expect(got[0]).toMatchObject({ type: 'dropped', dropped: 7 });
        expect(got.slice(1).map((l) => String(l.message).split(' ')[0])).toEqual(['7', '8', '9']);
      } finally {
        await back.stop();
      }
    } finally {
      await shipper.close();
      await restoreCollector();
    }
  });
});
