/**
 * The host registry and the host agent (issue 26 items 2 and 10, first slice) through the processes an operator
 * runs: `npm start` (its own machine's host) and one `npm run host` agent, `ha-h2` at 127.0.0.2 with its own
 * DATA_DIR, joined with what `npm run hosts -- join --env-file` wrote; `npm run hosts -- list --json`,
 * /health's counts and /metrics' gauges; a second agent with the name refused while the first heartbeats, its
 * supervised restart not; placement over both hosts (environments created through the API land on the host with
 * the most free memory, `list` counts them, 409 no_capacity once neither has room); a SIGKILLed agent `lost` after
 * HOST_LOST_SECONDS (3 here).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { repositoriesDir, useTestContext } from '../helpers/context';
import { createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import {
  type NpmStartPorts,
  npmStartDataDir,
  npmStartEnv,
  npmStartPorts,
  spawnNpmStart,
  stopNpmStart,
} from '../helpers/npm-start';
import { killProcessesMentioning, processesMentioning } from '../helpers/processes';
import { until as untilHolds } from '../helpers/until';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

// npm start runs on this file's database: its worker registers the host (the file registers none of its own)
const t = useTestContext({ host: false });
const root = path.resolve(__dirname, '../..');
const CP = 'ha-cp';
const H2 = 'ha-h2';
const LOST = 3;
const BIND = `127.0.${10 + Math.min(17, Math.max(0, Number(process.env.VC_TEST_PORT_SLOT) || 0))}.1`;

let start: ChildProcess;
let out = '';
let dataDir: string;
let ports: NpmStartPorts;
let startEnv: NodeJS.ProcessEnv;
/** What `hosts -- join` wrote for H2. */
let joined: Record<string, string>;
const agents: Array<{ child: ChildProcess; dataDir: string; out: string; exit: Promise<number | null> }> = [];

const until = <T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, ms = 60_000) =>
  untilHolds(what, fn, { timeoutMs: ms, ignoreErrors: true, intervalMs: 250, detail: () => out.slice(-4000) });

/** `npm run hosts -- ...args` with npm start's settings: its output and exit code. */
function hosts(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', '--silent', 'hosts', '--', ...args], { cwd: root, env: startEnv });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

interface Listed {
  name: string;
  address: string;
  status: string;
  capacity: Record<string, number>;
  used: Record<string, number>;
  environments: number;
}

async function listed(): Promise<Listed[]> {
  const r = await hosts('list', '--json');
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

function agentDir(): string {
  const dir = mkdtempSync(path.join(inject('runDir'), 'host-'));
  chmodSync(dir, 0o711);
  return dir;
}

/** `npm run host` as H2 (or another name) with `dir` as DATA_DIR, from the joined settings plus `extra`. */
function startAgent(dir: string, extra: NodeJS.ProcessEnv = {}) {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ...joined,
    DATA_DIR: dir,
    HOST_ADDRESS: '127.0.0.2',
    HOST_CAPACITY: 'cpu=2,memory_mb=2048,disk_gb=20',
    INSTANCE_PORTS: '31000-31099',
    STORAGE_ROOTS: path.join(dir, 'disks'),
    SANDBOX_NETWORK: '10.204.0.0/14',
    SERVICES_DATABASE_URL: t.databaseUrl,
    VC_WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    LOG_LEVEL: 'warn',
    ...extra,
  };
  const child = spawn('npm', ['run', 'host'], { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const agent = { child, dataDir: dir, out: '', exit: new Promise<number | null>((r) => child.once('exit', r)) };
  child.stdout!.on('data', (d: Buffer) => (agent.out += d));
  child.stderr!.on('data', (d: Buffer) => (agent.out += d));
  agents.push(agent);
  return agent;
}

/** Waits for `Host NAME joined` in the agent's output; fails at once when the agent exits instead. */
async function joinedOf(agent: ReturnType<typeof startAgent>): Promise<void> {
  let exited = false;
  void agent.exit.then(() => (exited = true));
  await untilHolds(
    `"Host ${H2} joined"`,
    () => {
      if (exited) throw new Error(`the agent exited: ${agent.out}`);
      return agent.out.includes(`Host ${H2} joined`);
    },
    { timeoutMs: 180_000, intervalMs: 250 },
  );
}

const api = (p: string) => `http://127.0.0.1:${ports.api}${p}`;
const health = async () => (await (await fetch(api('/api/vc/v1/health'))).json()) as { hosts: Record<string, number> };
const metrics = async () => (await fetch(api('/metrics'))).text();

beforeAll(async () => {
  dataDir = npmStartDataDir(t);
  ports = await npmStartPorts();
  startEnv = await npmStartEnv(t, ports, dataDir, {
    HOST_NAME: CP,
    HOST_LOST_SECONDS: String(LOST),
    // room for two environments of the default plan (small, 512 MB); the agent has room for four
    HOST_CAPACITY: 'cpu=2,memory_mb=1024,disk_gb=20',
    // hosts reach its Temporal there (an address of this machine's loopback but 127.0.0.1): join prints it
    CONTROL_PLANE_BIND: BIND,
  });
  start = spawnNpmStart(startEnv, (text) => (out += text));
  await until('"Hosting Console is running."', () => out.includes('Hosting Console is running.'), 240_000);
}, 300_000);

afterAll(async () => {
  for (const a of agents) {
    try {
      process.kill(-a.child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
    killProcessesMentioning(a.dataDir);
    rmSync(a.dataDir, { recursive: true, force: true });
  }
  await stopNpmStart(start, dataDir);
  rmSync(dataDir, { recursive: true, force: true });
}, 120_000);

describe('hosts', () => {
  it("npm start registers its own machine's host, ready", async () => {
    const list = await listed();
    expect(list).toEqual([
      expect.objectContaining({ name: CP, address: '127.0.0.1', status: 'ready', environments: 0 }),
    ]);
    expect(Object.keys(list[0]).sort()).toEqual(['address', 'capacity', 'environments', 'name', 'status', 'used']);
  });

  it('join writes the settings a new machine needs to a 0600 file; an agent without the key is refused', async () => {
    const file = path.join(dataDir, 'ha-h2.env');
    const r = await hosts('join', H2, '--env-file', file);
    expect(r.code, r.stderr).toBe(0);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    joined = Object.fromEntries(
      readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l && !l.startsWith('#'))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1).replace(/^'(.*)'$/, '$1')]),
    );
    const key = JSON.parse(readFileSync(path.join(dataDir, 'secrets', 'encryption-key.json'), 'utf8'));
    expect(joined).toEqual({
      HOST_NAME: H2,
      TEMPORAL_ADDRESS: `${BIND}:${ports.temporal}`,
      DATABASE_URL: t.databaseUrl,
      ENCRYPTION_KEY_ID: key.id,
      ENCRYPTION_KEY: Buffer.from(key.key, 'base64').toString('hex'),
      HOST_LOST_SECONDS: String(LOST),
      // npm start's directory store: this machine's (an agent on another machine refuses it)
      RELEASE_STORE: path.join(dataDir, 'releases'),
    });

    const dir = agentDir();
    const keyless = startAgent(dir, { ENCRYPTION_KEY: '', ENCRYPTION_KEY_ID: '' });
    expect(await keyless.exit).not.toBe(0);
    expect(keyless.out).toContain('needs the control plane');
    expect(existsSync(path.join(dir, 'secrets', 'encryption-key.json'))).toBe(false);
  });

  it('npm run host joins the agent: both hosts are ready in the list, /health and /metrics', async () => {
    const agent = startAgent(agentDir());
    await joinedOf(agent);
    const list = await listed();
    expect(list.map((h) => [h.name, h.status])).toEqual([
      [CP, 'ready'],
      [H2, 'ready'],
    ]);
    expect(list[1]).toEqual({
      name: H2,
      address: '127.0.0.2',
      status: 'ready',
      capacity: { cpu: 2, memory_mb: 2048, disk_gb: 20 },
      used: { cpu: 0, memory_mb: 0, disk_gb: 0 },
      environments: 0,
    });
    const row = await t.deps.knex('hosts').where({ name: H2 }).first();
    expect(row).toMatchObject({
      storage_roots: [path.join(agent.dataDir, 'disks')],
      instance_ports_from: 31000,
      instance_ports_to: 31099,
    });
    expect((await health()).hosts).toEqual({ ready: 2, draining: 0, drained: 0, lost: 0 });
    const text = await metrics();
    expect(text).toContain(`vc_host_ready{host="${H2}"} 1`);
    expect(text).toContain(`vc_host_capacity_memory_mb{host="${H2}"} 2048`);
    expect(text).toContain(`vc_host_used_memory_mb{host="${H2}"} 0`);
    expect(text).toContain(`vc_host_environments{host="${H2}"} 0`);

    // the agent polls its host's own queue (`host-NAME`: the task queue is the default here)
    const connection = await Connection.connect({ address: joined.TEMPORAL_ADDRESS });
    try {
      const queue = await connection.workflowService.describeTaskQueue({
        namespace: 'default',
        taskQueue: { name: `host-${H2}` },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
      });
      expect(queue.pollers.length).toBeGreaterThan(0);
    } finally {
      await connection.close();
    }
  }, 240_000);

  it('a second agent with the name is refused while the first heartbeats; a supervised restart is not', async () => {
    const second = startAgent(agentDir(), { HOST_ADDRESS: '127.0.0.3' });
    expect(await second.exit).not.toBe(0);
    expect(second.out).toContain(`Host name ${H2} is in use by another running agent`);
    expect((await t.deps.knex('hosts').where({ name: H2 }).first()).address).toBe('127.0.0.2');

    const first = agents.find((a) => a.out.includes(`Host ${H2} joined`))!;
    const before = (await t.deps.knex('hosts').where({ name: H2 }).first()).started_at as Date;
    const worker = Number(readFileSync(path.join(first.dataDir, 'run', 'worker.pid'), 'utf8'));
    process.kill(worker, 'SIGKILL');
    const again = await until('the restarted worker to take its host again', async () => {
      const row = await t.deps.knex('hosts').where({ name: H2 }).first();
      return row.started_at > before ? row : undefined;
    });
    expect(again.address).toBe('127.0.0.2');
    expect(first.out).toContain('restarting it');
    expect(first.out).not.toContain('is in use');
  }, 240_000);

  it('places each new environment on the host with the most free memory; 409 no_capacity once none has room', async () => {
    const repository = mkdtempSync(path.join(repositoriesDir(), 'hosts-placement-'));
    execFileSync('git', ['init', '-q', '-b', 'main', repository]);
    execFileSync(
      'git',
      ['-c', 'user.email=t@e.test', '-c', 'user.name=T', 'commit', '-q', '--allow-empty', '-m', 'a'],
      {
        cwd: repository,
      },
    );
    const owner = await createUser(t);
    const project = await createProject(t, await createTeam(t, owner), { repository_url: repository });
    const agent = await sessionAgent(t, owner);
    const placedOn: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await agent.post(`/projects/${project.id}/environments`, { name: `placed-${i}`, git_ref: 'main' });
      expect(res.status, res.text).toBe(201);
      placedOn.push((await t.deps.knex('servers').where({ environment_id: res.body.id, role: 'web' }).first()).host);
    }
    // free memory: H2 2048, CP 1024 -> H2, H2, then 1024 each (a tie: by name) CP, H2, 512 each: CP, H2
    expect(placedOn).toEqual([H2, H2, CP, H2, CP, H2]);
    const refused = await agent.post(`/projects/${project.id}/environments`, { name: 'one-too-many', git_ref: 'main' });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('no_capacity');
    expect(refused.body.error.message).toContain('no plan fits now');
    expect(refused.body.error.message).not.toContain(H2);
    const list = await listed();
    expect(list.map((h) => [h.name, h.used.memory_mb, h.environments])).toEqual([
      [CP, 1024, 2],
      [H2, 2048, 4],
    ]);
    expect(await metrics()).toContain(`vc_host_environments{host="${H2}"} 4`);
  }, 120_000);

  it('drain and undrain set the status', async () => {
    expect((await hosts('drain', H2)).code).toBe(0);
    expect((await listed()).find((h) => h.name === H2)?.status).toBe('draining');
    expect((await health()).hosts).toEqual({ ready: 1, draining: 1, drained: 0, lost: 0 });
    expect((await hosts('undrain', H2)).code).toBe(0);
    expect((await listed()).find((h) => h.name === H2)?.status).toBe('ready');
    const unknown = await hosts('drain', 'nobody');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('No host is named nobody');
  });

  it('Ctrl-C stops the agent cleanly; started again on its DATA_DIR it takes its name back at once', async () => {
    const first = agents.find((a) => a.out.includes(`Host ${H2} joined`))!;
    process.kill(-first.child.pid!, 'SIGINT'); // a terminal's Ctrl-C: the foreground group (npm dies of it)
    await until('the agent to say it stopped', () => first.out.includes('[host] Stopped.'));
    expect(first.out).toContain('[host] Stopped the worker process');
    await until('no process of the agent left', () => processesMentioning(first.dataDir).length === 0);
    const again = startAgent(first.dataDir);
    await joinedOf(again);
    expect((await listed()).find((h) => h.name === H2)?.status).toBe('ready');
  }, 240_000);

  it(`a SIGKILLed agent is lost after HOST_LOST_SECONDS (${LOST} s)`, async () => {
    const last = agents.at(-1)!;
    expect(last.out).toContain(`Host ${H2} joined`);
    killProcessesMentioning(last.dataDir);
    await until('ha-h2 lost', async () => (await listed()).find((h) => h.name === H2)?.status === 'lost');
    expect((await listed()).find((h) => h.name === CP)?.status).toBe('ready');
    expect((await health()).hosts).toEqual({ ready: 1, draining: 0, drained: 0, lost: 1 });
    expect(await metrics()).toContain(`vc_host_ready{host="${H2}"} 0`);
  }, 120_000);
});
