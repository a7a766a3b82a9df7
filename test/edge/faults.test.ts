/**
 * The edge's faults (issue 18 item 7), with the control plane as its own process (processes/edge.ts) and HAProxy
 * as its detached child: a SIGKILL of the control plane does not interrupt serving and a restarted one adopts
 * the running HAProxy (never a second one); a SIGKILL of HAProxy's master brings it back within seconds; rule
 * changes every second under load, and a reload, fail no request.
 */
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until as untilHolds } from '../helpers/until';
import { useTestContext } from '../helpers/context';
import { createDeployWorld, fetchEnvironment, waitForTask } from '../helpers/deploy-fixtures';
import { killAndWait, processesMentioning, spawnSystemProcess, stopChildren } from '../helpers/processes';
import { sessionAgent } from '../helpers/fixtures';
import { freePort } from '../helpers/ports';
import { haproxyPaths } from '../../edge/haproxy/paths';
import { command } from '../../edge/haproxy/runtime';
import { HAPROXY_BIN, masterReloads } from '../../edge/haproxy/process';
import { awaitEdges } from '../../db/queries/edge-routes';

const t = useTestContext();
const children: ChildProcess[] = [];
let edge: ChildProcess;
let edgePort: number;
let w: Awaited<ReturnType<typeof createDeployWorld>>;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

const masterPid = () => Number(readFileSync(haproxyPaths(t.dataDir).pidfile, 'utf8').trim());
/** HAProxy processes of this test's DATA_DIR (master and workers). */
const haproxies = () => processesMentioning(t.dataDir).filter((p) => p.split(' ')[1] === HAPROXY_BIN);

const until = <T>(what: string, fn: () => Promise<T | undefined | false>, ms = 30_000): Promise<T> =>
  untilHolds(what, fn, { timeoutMs: ms, intervalMs: 50, ignoreErrors: true });

/**
 * GET / on a kept-alive connection. As RFC 9112 9.3.1 asks of clients (browsers and curl do), a GET sent on a
 * reused connection that the server closed meanwhile (HAProxy's old worker closes its idle connections after
 * a reload) is sent again once, on a new connection.
 */
function get(agent: http.Agent, retried = false): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port: w.environment.port, path: '/', agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(0));
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      const closed = err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.message === 'socket hang up';
      if (req.reusedSocket && closed && !retried) resolve(get(agent, true));
      else resolve(0);
    });
  });
}

/** Requests in a loop (`parallel` at a time, each its kept-alive connection) until stopped: every status seen (0: failed). */
function load(parallel = 1) {
  let stop = false;
  const statuses: number[] = [];
  const loops = Array.from({ length: parallel }, async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    while (!stop) {
      statuses.push(await get(agent));
      await pause(5);
    }
    agent.destroy();
  });
  return {
    statuses,
    async stop() {
      stop = true;
      await Promise.all(loops);
      return statuses;
    },
  };
}

/** The edge (control plane) as its own process; resolves once it has applied the database's state. */
async function startEdgeProcess(): Promise<ChildProcess> {
  const since = new Date();
  const child = spawnSystemProcess(t, 'processes/edge.ts', { EDGE_PORT: String(edgePort) });
  await until('the edge to apply the state', async () => {
    const row = await t.deps.knex('edge_instances').where('applied_at', '>', since).first('id');
    return row ? true : undefined;
  });
  return child;
}

beforeAll(async () => {
  edgePort = await freePort();
  w = await createDeployWorld(t);
  edge = await startEdgeProcess();
  children.push(spawnSystemProcess(t, 'processes/worker.ts'));
  const res = await w.api.post(`/environments/${w.environment.id}/deploy`);
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, w.api, res.body.id, { timeoutMs: 90_000 });
  expect(task.status, task.error ?? '').toBe('succeeded');
  expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v1' });
}, 150_000);
afterAll(async () => {
  await stopChildren([...children, edge]);
  expect(haproxies()).toEqual([]);
});

describe('the edge under faults', () => {
  it('a SIGKILL of the control plane does not interrupt serving; a restarted one adopts HAProxy', async () => {
    const master = masterPid();
    const traffic = load();
    await pause(300);
    await killAndWait(edge, 'SIGKILL');
    // its HAProxy serves on what it last applied: a change is not in force there until a control plane adopts
    // it and applies (before, the wait went on as soon as the control plane's LISTEN session was gone)
    expect((await awaitEdges(t.deps.knex, 2000)).map((e) => e.name)).toEqual([expect.stringContaining(t.dataDir)]);
    await pause(1500); // no control plane: HAProxy serves on
    edge = await startEdgeProcess();
    await pause(300);
    const statuses = await traffic.stop();
    expect(statuses.length).toBeGreaterThan(20);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    // the same master, one of it: adopted, not started again
    expect(masterPid()).toBe(master);
    const proc = await command(haproxyPaths(t.dataDir).master, 'show proc');
    expect(proc.match(/\bmaster\b/g)).toHaveLength(1);
    // and the new control plane drives it: a rule takes effect
    const owner = await sessionAgent(t, w.owner);
    await owner.patch(`/projects/${w.project.id}/edge`, { blocked_user_agents: ['faultbot'] });
    await until('the rule', async () => {
      const res = await fetch(`http://127.0.0.1:${w.environment.port}/`, { headers: { 'user-agent': 'FaultBot' } });
      return res.status === 403;
    });
    await owner.patch(`/projects/${w.project.id}/edge`, { blocked_user_agents: [] });
  });

  it('a SIGKILL of HAProxy brings it back within seconds', async () => {
    const master = masterPid();
    process.kill(master, 'SIGKILL');
    await until(
      'a new HAProxy serving',
      async () => masterPid() !== master && (await fetchEnvironment(w.environment.port)).status === 200,
      20_000,
    );
    // the dead master's worker is gone too: one master, one worker (an old worker may finish a moment)
    await until('one worker', async () => haproxies().length === 2 || undefined).catch((err) => {
      throw new Error(`${err.message}: ${haproxies().join('; ')}`);
    });
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v1' });
  });

  it('rule changes every second under load, and a reload, fail no request', async () => {
    const owner = await sessionAgent(t, w.owner);
    const projectEdge = `/projects/${w.project.id}/edge`;
    const envEdge = `/environments/${w.environment.id}/edge`;
    const traffic = load(4);
    for (let i = 0; i < 6; i++) {
      const saved = await owner.patch(projectEdge, {
        blocked_addresses: [`10.0.${i}.0/24`],
        blocked_user_agents: [`bot-${i}`],
        rate_limit: { requests: 100_000, per_seconds: 60 },
      });
      expect(saved.status, saved.text).toBe(200);
      const allowed = await owner.patch(envEdge, { allowed_addresses: ['127.0.0.0/8', `10.1.${i}.0/24`] });
      expect(allowed.status, allowed.text).toBe(200);
      // stickiness and an error page are map entries (the project's requests take the error page's hop from
      // now on); then a reload, as the edge makes one for a held port freed or HAProxy's own upgrade
      if (i === 3) {
        expect((await owner.patch(envEdge, { stickiness: true })).status).toBe(200);
        const page = await owner.patch(projectEdge, { pages: { error: '<p>a moment</p>' } });
        expect(page.status, page.text).toBe(200);
        const before = await masterReloads(haproxyPaths(t.dataDir));
        process.kill(masterPid(), 'SIGUSR2');
        await until('the reload', async () => (await masterReloads(haproxyPaths(t.dataDir))) === before! + 1);
      }
      await pause(1000);
    }
    const statuses = await traffic.stop();
    expect(statuses.length).toBeGreaterThan(100);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    await owner.patch(projectEdge, {
      blocked_addresses: [],
      blocked_user_agents: [],
      rate_limit: null,
      pages: { error: null },
    });
    await owner.patch(envEdge, { allowed_addresses: [], stickiness: false });
  });

  it('the data plane’s files are root-only, and the runtime holds what they say', async () => {
    const p = haproxyPaths(t.dataDir);
    const stat = await import('node:fs/promises').then((fs) => fs.stat(p.dir));
    expect(stat.mode & 0o777).toBe(0o700);
    const file = join(p.dir, 'maps', 'ports.map');
    expect(readFileSync(file, 'utf8')).toContain(`${w.environment.port} ${w.environment.id}`);
    expect(await command(p.admin, `show map ${file}`)).toContain(`${w.environment.port} ${w.environment.id}`);
  });
});
