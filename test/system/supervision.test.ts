/**
 * `npm start` (node scripts/bootstrap.mjs start) with its real processes: each of them killed with SIGKILL
 * while a tenant's app is being requested, then the whole thing stopped with SIGINT to its process group,
 * as a terminal's Ctrl-C does. One `npm start` is shared by the cases, in order.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { environmentHome, tenantUid } from '../../host/provider/sandbox';
import { cgroupSubtree } from '../../host/provider/host-identity';
import type { ProcessState } from '../../system/run-state';
import { useTestContext } from '../helpers/context';
import { type AppRepo, createEnvironment, createSharedAppRepo } from '../helpers/deploy-fixtures';
import { createAccessToken, createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import { Agent } from '../helpers/http';
import {
  type NpmStartPorts,
  npmStartDataDir,
  npmStartEnv,
  npmStartPorts,
  spawnNpmStart,
  stopNpmStart,
  untilRunning,
} from '../helpers/npm-start';
import { processesMentioning, procStat } from '../helpers/processes';
import { startEmbeddedCluster } from '../helpers/services-server';
import { freePort } from '../helpers/ports';
import { until as untilHolds } from '../helpers/until';

// npm start runs on this file's database: its worker registers the host (the file registers none of its own)
const t = useTestContext({ host: false });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

let start: ChildProcess;
/** When `npm start` began (clock ticks after boot, as /proc/<pid>/stat says). */
let startStartedAt = 0;
let out = '';
let dataDir: string;
let ports: NpmStartPorts;
let api: Agent;
let repo: AppRepo;
let env: { id: string; port: number };
let owner: Awaited<ReturnType<typeof createUser>>;
const backIn: Record<string, number> = {};
let trusting: Awaited<ReturnType<typeof startEmbeddedCluster>> | undefined;
let trustingAt = '';

/** A process's process group (field 5 of /proc/<pid>/stat). */
function processGroup(pid: number): number {
  return Number(procStat(pid)[2]);
}

/** A process's state letter and start time (clock ticks after boot), from /proc/<pid>/stat. */
function stateOf(pid: number | string): { state: string; startedAt: number } {
  const fields = procStat(pid);
  return { state: fields[0], startedAt: Number(fields[19]) };
}

/**
 * The host's processes of the environment: under its uid, or in its cgroups, as `pid state command`. Not
 * counted: zombies (dead already; the sandbox's inner processes, orphaned when its outer bwrap dies, wait
 * there for the host's init to reap them, which takes seconds when the host is busy), and processes older
 * than this `npm start` (another test file's, before this one, on an environment of the same port and so
 * the same uid: none of this system's).
 */
function tenantProcesses(): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
      const cgroup = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
      if (uid !== tenantUid(env.port) && !cgroup.includes(`/${cgroupSubtree()}/${env.id}/`)) continue;
      const { state, startedAt } = stateOf(pid);
      if (state === 'Z' || state === 'X' || startedAt < startStartedAt) continue;
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      found.push(`${pid} ${state} ${cmdline}`);
    } catch {
      // gone
    }
  }
  return found;
}

function processes(): ProcessState[] {
  return JSON.parse(readFileSync(path.join(dataDir, 'run', 'processes.json'), 'utf8')).processes;
}
const proc = (name: string) => processes().find((p) => p.name === name)!;

/** Waits for `fn` (errors count as not yet), showing the tail of the system's output when it times out. */
const until = <T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, ms = 120_000) =>
  untilHolds(what, fn, { timeoutMs: ms, ignoreErrors: true, detail: () => out.slice(-4000) });

/** SIGKILL to the named child; resolves once the supervisor runs a new one, with the seconds it took. */
async function killAndAwaitBack(name: string, back: () => Promise<boolean>): Promise<number> {
  const old = proc(name);
  expect(old.status).toBe('running');
  const killedAt = Date.now();
  process.kill(old.pid!, 'SIGKILL');
  await until(`${name} back`, async () => {
    const now = proc(name);
    return now.status === 'running' && now.pid !== old.pid && (await back());
  });
  const seconds = (Date.now() - killedAt) / 1000;
  backIn[name] = seconds;
  return seconds;
}

/** Requests to the tenant's app, ten a second, each noted with its time. */
function requestLoop() {
  const results: { at: number; ok: boolean; what: string }[] = [];
  let running = true;
  const done = (async () => {
    while (running) {
      const at = Date.now();
      await fetch(`http://127.0.0.1:${env.port}/`, { signal: AbortSignal.timeout(10_000) })
        .then(async (r) => results.push({ at, ok: r.status === 200, what: `${r.status} ${await r.text()}` }))
        .catch((e) => results.push({ at, ok: false, what: String(e.cause?.code ?? e.message) }));
      await pause(100);
    }
  })();
  return {
    results,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

async function health() {
  return fetch(`http://127.0.0.1:${ports.api}/api/vc/v1/health`).then((r) => r.json());
}

async function waitForTask(id: string, pred: (task: { status: string }) => boolean, ms = 180_000) {
  return until(
    `task ${id}`,
    async () => {
      const r = await api.get(`/tasks/${id}`);
      return r.status === 200 && pred(r.body) ? r.body : undefined;
    },
    ms,
  );
}

beforeAll(async () => {
  // the same keys as this file's context, so that its token is the started API's too
  dataDir = npmStartDataDir(t);
  ports = await npmStartPorts();

  owner = await createUser(t);
  const team = await createTeam(t, owner);
  repo = createSharedAppRepo();
  writeFileSync(repo.gate, '');
  repo.commit('v1');
  const project = await createProject(t, team, { repository_url: repo.dir });
  const row = await createEnvironment(t, project, { name: 'production' });
  env = { id: row.id, port: row.port! };
  mkdirSync(environmentHome(dataDir, env.id), { recursive: true });
  api = new Agent(`http://127.0.0.1:${ports.api}/api/vc/v1`).withBearer(await createAccessToken(t, owner, team));

  // a services server that accepts a wrong password, of this file's own (not whatever this machine runs on 5432)
  const trustingPort = await freePort();
  trusting = await startEmbeddedCluster(path.join(t.dataDir, 'trusting-pg'), trustingPort, {
    sandboxes: false,
    trusting: true,
  });
  trustingAt = `127.0.0.1:${trustingPort}`;
  start = spawnNpmStart(await npmStartEnv(t, ports, dataDir, { SERVICES_DATABASE_URL: trusting.url }), (text) => {
    out += text;
  });
  startStartedAt = stateOf(start.pid!).startedAt;
  await untilRunning(start, () => out);
}, 300_000);

afterAll(async () => {
  writeFileSync(repo.gate, '');
  await stopNpmStart(start, dataDir);
  await trusting?.stop();
  if (Object.keys(backIn).length)
    console.log(
      `[supervision] back after SIGKILL: ${Object.entries(backIn)
        .map(([k, v]) => `${k} ${v.toFixed(1)} s`)
        .join(', ')}`,
    );
  rmSync(dataDir, { recursive: true, force: true });
}, 120_000);

describe('npm start supervises its processes', () => {
  let loop: ReturnType<typeof requestLoop>;

  it('writes a pid file per child and lists them in /health; says in its banner which settings to change', async () => {
    const listed = (await health()).processes as ProcessState[];
    expect(listed.map((p) => p.name).sort()).toEqual(['api', 'edge', 'shipper', 'temporal', 'worker']);
    for (const p of listed) {
      expect(p.status).toBe('running');
      expect(Number(readFileSync(path.join(dataDir, 'run', `${p.name}.pid`), 'utf8'))).toBe(p.pid);
      expect(() => process.kill(p.pid!, 0)).not.toThrow();
      // a process group of its own: a terminal's Ctrl-C (to npm start's group) does not reach it
      expect(processGroup(p.pid!)).toBe(p.pid);
      expect(processGroup(p.pid!)).not.toBe(processGroup(start.pid!));
    }
    // the services server trusts without a password: said at start, reported by /health
    expect(out).toMatch(
      new RegExp(
        `To change: +the services server ${trustingAt.replaceAll('.', '\\.')} accepts a wrong password.*scram-sha-256`,
      ),
    );
    const h = await health();
    expect(h.settings.services).toMatchObject({
      status: 'problem',
      change: expect.stringContaining('SERVICES_DATABASE_URL'),
    });
    expect(h.settings.storage).toEqual({ status: 'ok', reason: null, change: null });
  });

  it('refuses a database service on the services server the sandboxes cannot reach, with 409 services_unreachable', async () => {
    // a signed-in owner (services are not for tokens), on the started API
    const session = await sessionAgent(t, owner);
    const owners = new Agent(`http://127.0.0.1:${ports.api}/api/vc/v1`);
    for (const [k, v] of session.cookies) owners.cookies.set(k, v);
    owners.csrf = session.csrf;
    const choices = await owners.get(`/environments/${env.id}/services/choices`);
    expect(choices.status, choices.text).toBe(200);
    const plan = choices.body.data[0].plans[0].id;
    const res = await owners.post(`/environments/${env.id}/services`, { kind: 'postgresql', plan });
    expect(res.status, res.text).toBe(409);
    expect(res.body.error.code).toBe('services_unreachable');
    expect(res.body.error.message).toMatch(/accepts a wrong password/);
    expect(res.body.error.setting).toMatch(/SERVICES_DATABASE_URL/);
    expect(await t.deps.knex('services').where({ environment_id: env.id })).toHaveLength(0);
  });

  it('deploys the app, which then answers through the edge', async () => {
    const v1 = await api.post(`/environments/${env.id}/deploy`);
    expect(v1.status, v1.text).toBe(202);
    expect((await waitForTask(v1.body.id, (x) => ['succeeded', 'failed'].includes(x.status))).status).toBe('succeeded');
    await until('v1 served', async () => (await fetch(`http://127.0.0.1:${env.port}/`).then((r) => r.text())) === 'v1');
    loop = requestLoop();
  });

  it('restarts a killed worker; the deploy it was building completes; no request fails meanwhile', async () => {
    rmSync(repo.gate);
    repo.commit('v2', { gated: true });
    const v2 = await api.post(`/environments/${env.id}/deploy`);
    expect(v2.status, v2.text).toBe(202);
    await waitForTask(v2.body.id, (x) => x.status === 'running');
    await pause(1000); // into its build
    const from = Date.now();
    await killAndAwaitBack('worker', async () => (await health()).components.worker.status === 'ok');
    expect(out).toMatch(/\[start\] The worker process exited unexpectedly \(killed by SIGKILL\); restarting it in/);
    writeFileSync(repo.gate, '');
    const done = await waitForTask(v2.body.id, (x) => ['succeeded', 'failed'].includes(x.status));
    expect(done.status, JSON.stringify(done)).toBe('succeeded');
    await until('v2 served', async () => (await fetch(`http://127.0.0.1:${env.port}/`).then((r) => r.text())) === 'v2');
    const during = loop.results.filter((r) => r.at >= from);
    expect(during.length).toBeGreaterThan(20);
    expect(during.filter((r) => !r.ok)).toEqual([]);
  }, 300_000);

  it('restarts a killed API on the same port; no request to the app fails meanwhile', async () => {
    const from = Date.now();
    await killAndAwaitBack('api', async () => (await fetch(`http://127.0.0.1:${ports.api}/api/vc/v1/health`)).ok);
    const during = loop.results.filter((r) => r.at >= from);
    expect(during.length).toBeGreaterThan(3);
    expect(during.filter((r) => !r.ok)).toEqual([]);
  }, 120_000);

  it('restarts a killed Temporal dev server on its own database file, with its history', async () => {
    const address = `127.0.0.1:${ports.temporal}`;
    const ids = async () => {
      const connection = await Connection.connect({ address });
      try {
        const found: string[] = [];
        for await (const w of new Client({ connection }).workflow.list()) found.push(w.workflowId);
        return found.sort();
      } finally {
        await connection.close();
      }
    };
    const before = await ids();
    expect(before.length).toBeGreaterThan(1);
    const from = Date.now();
    await killAndAwaitBack('temporal', async () => (await health()).components.temporal.status === 'ok');
    expect(await ids()).toEqual(before);
    // tasks run again: a redeploy through the restarted server and the same worker
    const again = await api.post(`/environments/${env.id}/redeploy`);
    expect(again.status, again.text).toBe(202);
    expect((await waitForTask(again.body.id, (x) => ['succeeded', 'failed'].includes(x.status))).status).toBe(
      'succeeded',
    );
    expect(loop.results.filter((r) => r.at >= from && !r.ok)).toEqual([]);
  }, 300_000);

  it('restarts a killed edge, serving again within seconds', async () => {
    const seconds = await killAndAwaitBack('edge', async () => (await fetch(`http://127.0.0.1:${env.port}/`)).ok);
    expect(seconds).toBeLessThan(30);
    await loop.stop();
    const last = loop.results.at(-1)!;
    expect(last).toMatchObject({ ok: true, what: '200 v2' });
  }, 120_000);

  it('gives up on a process that exits five times within a minute, alone, and says which and why', async () => {
    // the edge's exit of the case before counts too: the fifth within a minute is the last
    let kills = 0;
    while (proc('edge').status !== 'failed' && kills < 5) {
      const before = await until('the edge running or given up', () => {
        const p = proc('edge');
        return (p.status === 'running' && p.pid) || p.status === 'failed' ? p : undefined;
      });
      if (before.status === 'failed') break;
      process.kill(before.pid!, 'SIGKILL');
      kills++;
      await until('the edge restarted or given up', () => {
        const now = proc('edge');
        return now.status === 'failed' || (now.status !== 'restarting' && now.pid !== before.pid);
      });
    }
    expect(kills).toBeGreaterThanOrEqual(4);
    expect(proc('edge')).toMatchObject({ status: 'failed', pid: null });
    // the line follows the state file through the pipes
    await until('the giving-up line', () =>
      /\[start\] Giving up on the edge process: it exited 5 times within 60 s \(last: killed by SIGKILL\)/.test(out),
    );
    const h = await health();
    expect(h.status).toBe('degraded');
    expect(h.processes.find((p: ProcessState) => p.name === 'edge')).toMatchObject({
      status: 'failed',
      reason: expect.stringContaining('exited 5 times within 60 s'),
    });
    for (const name of ['api', 'worker', 'temporal']) expect(proc(name).status).toBe('running');
  }, 120_000);

  it('stops in order on SIGINT to its process group, printing no stack trace and leaving no process behind', async () => {
    const state = JSON.parse(readFileSync(path.join(dataDir, 'environments', env.id, 'current.json'), 'utf8'));
    const webPids: number[] = (state.pids ?? [state.pid]).filter(Boolean);
    expect(webPids.length).toBeGreaterThan(0);
    for (const pid of webPids) expect(() => process.kill(pid, 0)).not.toThrow();
    expect(tenantProcesses().length).toBeGreaterThan(0);
    const mark = out.length;
    const exited = new Promise<number | null>((r) => start.once('close', (code) => r(code)));
    process.kill(-start.pid!, 'SIGINT');
    expect(await Promise.race([exited, pause(120_000).then(() => 'still running')])).toBe(0);
    const tail = out.slice(mark);
    const order = ['api', 'edge', 'shipper', 'worker', 'temporal'].map((n) =>
      tail.indexOf(`[start] Stopped the ${n} process`),
    );
    expect(
      order.every((i) => i >= 0),
      tail,
    ).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(tail).not.toMatch(/terminating connection due to administrator command|Acquire connection error|\n\s+at /);
    expect(tail).not.toContain('before its turn to stop'); // no child got the signal itself
    expect(processesMentioning(dataDir)).toEqual([]);
    for (const pid of webPids) expect(() => process.kill(pid, 0)).toThrow();
    expect(tenantProcesses()).toEqual([]);
  }, 180_000);
});
