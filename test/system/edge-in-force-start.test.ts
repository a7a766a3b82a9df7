/**
 * Issue 28 items 1 and 2 through `npm start`'s own processes: an edge write answers once the edge serves it
 * (the very next request sees it), a change made while the edge's control plane is dead or frozen is never
 * reported done before it is in force (503 edge_unavailable for an answer, `failed` for a task, a deploy's
 * previous route put back), and the request log goes to a changed or removed destination from the next line.
 * One `npm start` is shared by the cases, in order.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haproxyPaths } from '../../edge/haproxy/paths';
import { runtimeCommand } from '../../edge/runtime-command';
import { environmentHome } from '../../host/provider/sandbox';
import { dayOf, machineFile } from '../../logs/machine-files';
import { readProcesses } from '../../system/run-state';
import { useTestContext } from '../helpers/context';
import { type AppRepo, createEnvironment, createSharedAppRepo, taskLog, waitForTask } from '../helpers/deploy-fixtures';
import { createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
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
import { startReceiver, type Receiver } from '../helpers/receiver';
import { startSyslog, type SyslogListener } from '../helpers/syslog';
import { until as untilHolds } from '../helpers/until';

// npm start runs on this file's database: its worker registers the host (the file registers none of its own)
const t = useTestContext({ host: false });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** EDGE_TASK_WAIT_SECONDS of this npm start: 3x what a restarted control plane took under load (~5 s), short for a test. */
const TASK_WAIT_SECONDS = 15;

let start: ChildProcess;
let out = '';
let dataDir: string;
let ports: NpmStartPorts;
let api: Agent;
let repo: AppRepo;
let env: { id: string; port: number };
let project: { id: string; team_id: string };

const until = <T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, ms = 60_000) =>
  untilHolds(what, fn, {
    timeoutMs: ms,
    ignoreErrors: true,
    // npm start's own lines and the edge's (at info: each change it applied), not the other processes' logs
    detail: () =>
      `the last visit: ${lastVisit}\n${out
        .split('\n')
        .filter((l) => !l.startsWith('{') || l.includes('"name":"edge"'))
        .join('\n')
        .slice(-6000)}`,
  });
/** What the last `visit` got (for a wait's timeout: a status and the body's start, or the error). */
let lastVisit = 'none';

/** One request to the environment's port: its status, body and headers. */
async function visit(
  pathname = '/',
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; headers: Headers }> {
  try {
    const r = await fetch(`http://127.0.0.1:${env.port}${pathname}`, { headers });
    const text = await r.text();
    lastVisit = `${r.status} ${JSON.stringify(text.slice(0, 120))}`;
    return { status: r.status, text, headers: r.headers };
  } catch (err) {
    lastVisit = `${(err as Error).message} (${String((err as { cause?: unknown }).cause)})`;
    throw err;
  }
}

/** The edge's control plane as npm start's supervisor records it (running). */
function edgeProcess(): { pid: number } {
  const edge = readProcesses(dataDir)?.find((p) => p.name === 'edge');
  if (edge?.status !== 'running' || !edge.pid) throw new Error(`the edge is not running: ${JSON.stringify(edge)}`);
  return { pid: edge.pid };
}

/** The HAProxy master serving this DATA_DIR (its pidfile), and whether it runs. */
function haproxyMaster(): number {
  const pid = Number(
    readFileSync(join(dataDir, 'edge', 'haproxy', 'haproxy.pid'), 'utf8')
      .trim()
      .split('\n')[0],
  );
  process.kill(pid, 0);
  return pid;
}

/** HAProxy's own agents ACL (its runtime API) beside the file on disk, for a failure's message. */
async function agentsView(): Promise<string> {
  const paths = haproxyPaths(dataDir);
  const file = join(paths.acls, 'agents.acl');
  const held = await runtimeCommand(paths.admin, `show acl ${file}`).catch((e: Error) => e.message);
  let onDisk: string;
  try {
    onDisk = readFileSync(file, 'utf8');
  } catch (err) {
    onDisk = (err as Error).message;
  }
  return `HAProxy holds (show acl):\n${held}\nagents.acl on disk:\n${onDisk}`;
}

async function runTask(path: string, body: unknown, timeoutMs = 180_000) {
  const res = await api.post(path, body);
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, api, res.body.id, { timeoutMs });
  return { ...task, log: await taskLog(t, api, task.id) };
}

beforeAll(async () => {
  dataDir = npmStartDataDir(t);
  ports = await npmStartPorts();
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  repo = createSharedAppRepo();
  writeFileSync(repo.gate, '');
  repo.commit('v1');
  project = await createProject(t, team, { repository_url: repo.dir });
  const row = await createEnvironment(t, project, { name: 'production' });
  env = { id: row.id, port: row.port! };
  mkdirSync(environmentHome(dataDir, env.id), { recursive: true });
  // this context's session, valid on the started API (the same keys)
  const session = await sessionAgent(t, owner);
  api = new Agent(`http://127.0.0.1:${ports.api}/api/vc/v1`);
  for (const [k, v] of session.cookies) api.cookies.set(k, v);
  api.csrf = session.csrf;

  start = spawnNpmStart(
    await npmStartEnv(t, ports, dataDir, {
      OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
      EDGE_TASK_WAIT_SECONDS: String(TASK_WAIT_SECONDS),
      // the edge's "applied a change" lines, for a failure's message
      LOG_LEVEL: 'info',
    }),
    (text) => {
      out += text;
    },
  );
  await untilRunning(start, () => out);
  const deploy = await runTask(`/environments/${env.id}/deploy`, {});
  expect(deploy.status, deploy.log).toBe('succeeded');
  expect((await visit('/')).text).toBe('v1');
}, 420_000);

afterAll(async () => {
  // a frozen control plane must not hold the stop
  try {
    process.kill(edgeProcess().pid, 'SIGCONT');
  } catch {
    // not running
  }
  await stopNpmStart(start, dataDir);
  rmSync(dataDir, { recursive: true, force: true });
}, 120_000);

describe('an edge write answers once the edge serves it', () => {
  it('the very next request after the answer sees the rule: stickiness, a blocked agent, a password', async () => {
    const sticky = await api.patch(`/environments/${env.id}/edge`, { stickiness: true });
    expect(sticky.status, sticky.text).toBe(200);
    expect((await visit('/')).headers.get('set-cookie')).toMatch(/=/);

    const blocked = await api.patch(`/projects/${project.id}/edge`, { blocked_user_agents: ['nextbot'] });
    expect(blocked.status, blocked.text).toBe(200);
    expect((await visit('/', { 'user-agent': 'NextBot/1.0' })).status).toBe(403);

    const locked = await api.patch(`/environments/${env.id}/edge`, {
      password: { username: 'u', password: 'pw-next-1' },
    });
    expect(locked.status, locked.text).toBe(200);
    expect((await visit('/')).status).toBe(401);

    const open = await api.patch(`/environments/${env.id}/edge`, { password: null, stickiness: false });
    expect(open.status, open.text).toBe(200);
    expect((await visit('/')).status).toBe(200);
    const allowed = await api.patch(`/projects/${project.id}/edge`, { blocked_user_agents: [] });
    expect(allowed.status, allowed.text).toBe(200);
    expect((await visit('/', { 'user-agent': 'NextBot/1.0' })).status).toBe(200);
  }, 60_000);
});

describe('the control plane killed before a change', () => {
  it('a maintenance task succeeds only once the restarted control plane has adopted HAProxy and applied it', async () => {
    const master = haproxyMaster();
    const killed = edgeProcess().pid;
    process.kill(killed, 'SIGKILL');
    const task = await runTask(`/environments/${env.id}/maintenance`, { maintenance: true, note: 'killed edge' });
    expect(task.status, `${task.error}\n${task.log}`).toBe('succeeded');
    // the very next request gets the maintenance page: the task did not report a state it had not seen applied
    const during = await visit('/');
    expect(during.status).toBe(503);
    // a new control plane drives the same HAProxy (adopted, not a second one)
    expect(edgeProcess().pid).not.toBe(killed);
    expect(haproxyMaster()).toBe(master);
    const off = await runTask(`/environments/${env.id}/maintenance`, { maintenance: false });
    expect(off.status, `${off.error}\n${off.log}`).toBe('succeeded');
    expect((await visit('/')).text).toBe('v1');
  }, 240_000);
});

describe('a control plane that cannot apply (frozen: SIGSTOP) while HAProxy serves', () => {
  it('an edge write answers 503 edge_unavailable, keeps the change, and the edge applies it when back', async () => {
    const edge = edgeProcess();
    process.kill(edge.pid, 'SIGSTOP');
    try {
      const res = await api.patch(`/projects/${project.id}/edge`, { blocked_user_agents: ['frozenbot'] });
      expect(res.status, res.text).toBe(503);
      expect(res.body.error.code).toBe('edge_unavailable');
      expect(res.body.error.message).toMatch(/saved.*applied when the edge is back/);
      const saved = await api.get(`/projects/${project.id}/edge`);
      expect(saved.body.blocked_user_agents).toEqual(['frozenbot']);
    } finally {
      process.kill(edge.pid, 'SIGCONT');
    }
    await until(
      'the kept rule in force',
      async () => (await visit('/', { 'user-agent': 'FrozenBot' })).status === 403,
    ).catch(async (err: Error) => {
      // what HAProxy holds beside what the file says: which side of the apply went missing
      throw new Error(`${err.message}\n${await agentsView()}`);
    });
    const cleared = await api.patch(`/projects/${project.id}/edge`, { blocked_user_agents: [] });
    expect(cleared.status, cleared.text).toBe(200);
    // room for the write's 10 s, the wait's own 60 s (its message says what it saw) and the clearing write
  }, 150_000);

  it(`a task waits EDGE_TASK_WAIT_SECONDS, its log naming the edge, then ends failed`, async () => {
    const edge = edgeProcess();
    process.kill(edge.pid, 'SIGSTOP');
    let task: Awaited<ReturnType<typeof runTask>>;
    try {
      task = await runTask(`/environments/${env.id}/maintenance`, { maintenance: true });
    } finally {
      process.kill(edge.pid, 'SIGCONT');
    }
    expect(task.status, task.log).toBe('failed');
    expect(task.error).toContain(`did not apply the change within ${TASK_WAIT_SECONDS} s`);
    expect(task.error).toContain(dataDir);
    expect(task.log).toContain(`Waiting up to ${TASK_WAIT_SECONDS} s for the edge `);
    expect(task.log).toContain(`:${dataDir} (`);
    // the change is kept: applied once the edge is back; then turned off again
    await until('the maintenance page', async () => (await visit('/')).status === 503);
    const off = await runTask(`/environments/${env.id}/maintenance`, { maintenance: false });
    expect(off.status, `${off.error}\n${off.log}`).toBe('succeeded');
    expect((await visit('/')).text).toBe('v1');
  }, 240_000);

  it('a deploy that the edge does not apply fails and puts the previous route back', async () => {
    repo.commit('v2');
    const edge = edgeProcess();
    process.kill(edge.pid, 'SIGSTOP');
    let task: Awaited<ReturnType<typeof runTask>>;
    try {
      task = await runTask(`/environments/${env.id}/deploy`, {}, 300_000);
    } finally {
      process.kill(edge.pid, 'SIGCONT');
    }
    expect(task.status, task.log).toBe('failed');
    expect(task.error).toContain('did not apply the change');
    // the previous release serves on, and once the edge has applied what is recorded (an edge write answered
    // 200 says so), still: never a route to v2's stopped processes
    for (let i = 0; i < 3; i++) expect(await visit('/')).toMatchObject({ status: 200, text: 'v1' });
    const applied = await api.patch(`/environments/${env.id}/edge`, { stickiness: false });
    expect(applied.status, applied.text).toBe(200);
    for (let i = 0; i < 3; i++) expect(await visit('/')).toMatchObject({ status: 200, text: 'v1' });
  }, 360_000);
});

describe('the request log follows its destination', () => {
  let receiver: Receiver;
  let udp: SyslogListener;
  let tcp: SyslogListener;
  beforeAll(async () => {
    receiver = await startReceiver(0, '/ingest');
    udp = await startSyslog('udp');
    tcp = await startSyslog('tcp');
  });
  afterAll(async () => {
    await receiver?.stop();
    await udp?.stop();
    await tcp?.stop();
  });

  const overHttp = (marker: string) => receiver.received.some((r) => r.body.includes(`"path":"${marker}"`));
  const overSyslog = (l: SyslogListener, marker: string) => l.messages.some((m) => m.includes(`"path":"${marker}"`));
  const inMachineFile = (marker: string) => {
    try {
      return readFileSync(machineFile(dataDir, env.id, 'requests', dayOf(new Date())), 'utf8').includes(
        `"path":"${marker}"`,
      );
    } catch {
      return false;
    }
  };
  const save = async (destination: unknown) => {
    const res = await api.post(`/projects/${project.id}/logs`, { destination });
    expect(res.status, res.text).toBe(200);
    if (destination) expect(res.body.can_send, res.text).toBe(true);
  };

  it('http, then syslog udp, then tcp, then none: the line of the request right after each save goes there', async () => {
    await save({ kind: 'http', name: 'collector', url: receiver.url });
    expect((await visit('/to-http')).status).toBe(200);
    await until('the line over http', () => overHttp('/to-http'));

    await save({ kind: 'syslog', name: 'udp', host: '127.0.0.1', port: udp.port, protocol: 'udp' });
    expect((await visit('/to-udp')).status).toBe(200);
    await until('the line over syslog udp', () => overSyslog(udp, '/to-udp'));
    expect(overHttp('/to-udp')).toBe(false);

    await save({ kind: 'syslog', name: 'tcp', host: '127.0.0.1', port: tcp.port, protocol: 'tcp' });
    expect((await visit('/to-tcp')).status).toBe(200);
    await until('the line over syslog tcp', () => overSyslog(tcp, '/to-tcp'));
    expect(overSyslog(udp, '/to-tcp')).toBe(false);

    await save(null);
    expect((await visit('/to-nowhere')).status).toBe(200);
    await until('the line in the machine file', () => inMachineFile('/to-nowhere'));
    // its flush is the one that would have sent it: a second flush (1 s) and a send's time later, nowhere
    await pause(3000);
    expect(overSyslog(tcp, '/to-nowhere')).toBe(false);
    expect(overSyslog(udp, '/to-nowhere')).toBe(false);
    expect(overHttp('/to-nowhere')).toBe(false);
  }, 120_000);
});

describe("npm start's stop after a SIGKILL of the control plane", () => {
  it('stops the HAProxy left running and removes its row: nothing waits for an edge that is gone', async () => {
    const master = haproxyMaster();
    expect(await t.deps.knex('edge_instances').pluck('id')).toHaveLength(1);
    process.kill(edgeProcess().pid, 'SIGKILL');
    const exited = new Promise((r) => start.once('exit', r));
    process.kill(-start.pid!, 'SIGINT');
    await Promise.race([exited, pause(90_000)]);
    expect(start.exitCode, out.slice(-3000)).toBe(0);
    expect(() => process.kill(master, 0)).toThrow();
    expect(await t.deps.knex('edge_instances').pluck('id')).toEqual([]);
  }, 120_000);
});
