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
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
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
  untilRunning,
} from '../helpers/npm-start';
import { killProcessesMentioning, killProcessesUnder, processesMentioning } from '../helpers/processes';
import { backendServers, readEnvFile, runWrk } from '../helpers/host-agents';
import { createSharedAppRepo, fetchEnvironment, taskLog, waitForTask } from '../helpers/deploy-fixtures';
import { Agent } from '../helpers/http';
import { startS3 } from '../helpers/s3';
import { removeHostNetworks } from '../helpers/second-host';
import { environmentVolume } from '../../db/queries/storage';
import { until as untilHolds } from '../helpers/until';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { testPortSlot } from '../helpers/test-workers';

// npm start runs on this file's database: its worker registers the host (the file registers none of its own)
const t = useTestContext({ host: false });
const root = path.resolve(__dirname, '../..');
const CP = 'ha-cp';
const H2 = 'ha-h2';
const H3 = 'ha-h3';
/** H3's own address, instance ports and sandbox block (H2 has 127.0.0.2, 31000-31099, 10.204.0.0/14). */
const H3_ENV = { HOST_ADDRESS: '127.0.0.3', INSTANCE_PORTS: '31100-31199', SANDBOX_NETWORK: '10.212.0.0/14' };
const LOST = 3;
const BIND = `127.0.${10 + testPortSlot()}.1`;

let start: ChildProcess;
let out = '';
let dataDir: string;
let ports: NpmStartPorts;
let startEnv: NodeJS.ProcessEnv;
/** What `hosts -- join` wrote for H2, for H3. */
let joined: Record<string, string>;
let joined3: Record<string, string>;
const agents: Array<{ child: ChildProcess; dataDir: string; out: string; exit: Promise<number | null> }> = [];
/** The release store: s3rver's bucket `releases`. */
let s3: Awaited<ReturnType<typeof startS3>>;

const until = <T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, ms = 60_000) =>
  untilHolds(what, fn, {
    timeoutMs: ms,
    ignoreErrors: true,
    intervalMs: 250,
    detail: () => `${out.slice(-3000)}\n${agents.map((a) => a.out.slice(-1500)).join('\n---\n')}`,
  });

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
function startAgent(dir: string, extra: NodeJS.ProcessEnv = {}, settings = joined) {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ...settings,
    DATA_DIR: dir,
    HOST_ADDRESS: '127.0.0.2',
    HOST_CAPACITY: 'cpu=2,memory_mb=2048,disk_gb=20',
    INSTANCE_PORTS: '31000-31099',
    STORAGE_ROOTS: path.join(dir, 'disks'),
    SANDBOX_NETWORK: '10.204.0.0/14',
    SERVICES_DATABASE_URL: t.databaseUrl,
    // it builds too (any worker takes a build): the test's local repositories, as npm start has them
    LOCAL_REPOSITORY_ROOTS: t.config.localRepositoryRoots.join(','),
    SANDBOX_SHARED_DIRS: t.config.sandboxSharedDirs.join(','),
    // its environments' usage samples (volume_held: which of them a lost host's watch may move) every second
    RESOURCE_SAMPLE_SECONDS: '1',
    VC_WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    VC_PROCESS_BUNDLES: inject('processBundles'),
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
async function joinedOf(agent: ReturnType<typeof startAgent>, name = H2): Promise<void> {
  let exited = false;
  void agent.exit.then(() => (exited = true));
  await untilHolds(
    `"Host ${name} joined"`,
    () => {
      if (exited) throw new Error(`the agent exited: ${agent.out}`);
      return agent.out.includes(`Host ${name} joined`);
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
  s3 = await startS3(['releases']);
  startEnv = await npmStartEnv(t, ports, dataDir, {
    HOST_NAME: CP,
    HOST_LOST_SECONDS: String(LOST),
    // room for two environments of the default plan (small, 512 MB); the agent has room for four
    HOST_CAPACITY: 'cpu=2,memory_mb=1024,disk_gb=20',
    // hosts reach its Temporal there (an address of this machine's loopback but 127.0.0.1): join prints it
    CONTROL_PLANE_BIND: BIND,
    // its worker ensures the system schedules, the host watch among them (every 5 s): moves of lost hosts, drains
    REMINDER_SCHEDULE: 'on',
    // releases in a store every host reads (as on several machines), S3: s3rver on loopback
    RELEASE_STORE: 's3://releases/vc',
    S3_ENDPOINT: s3.endpoint,
    S3_REGION: 'us-east-1',
    S3_ACCESS_KEY_ID: s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
  });
  start = spawnNpmStart(startEnv, (text) => (out += text));
  await untilRunning(start, () => out);
}, 300_000);

afterAll(async () => {
  for (const a of agents) {
    try {
      process.kill(-a.child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
    killProcessesMentioning(a.dataDir);
    killProcessesUnder(a.dataDir);
    rmSync(a.dataDir, { recursive: true, force: true });
  }
  // what their sandboxes left on the kernel: network namespaces, nft tables (their instance-port DNATs)
  removeHostNetworks(H2);
  removeHostNetworks(H3);
  await stopNpmStart(start, dataDir);
  rmSync(dataDir, { recursive: true, force: true });
  await s3?.stop();
}, 120_000);

describe('hosts', () => {
  it("npm start registers its own machine's host, ready", async () => {
    const list = await listed();
    expect(list).toEqual([
      expect.objectContaining({ name: CP, address: '127.0.0.1', status: 'ready', environments: 0 }),
    ]);
    expect(Object.keys(list[0]).sort()).toEqual([
      'address',
      'capacity',
      'encryption_key_id',
      'environments',
      'held',
      'name',
      'status',
      'used',
    ]);
  });

  it('join writes the settings a new machine needs to a 0600 file; an agent without the key is refused', async () => {
    const file = path.join(dataDir, 'ha-h2.env');
    const r = await hosts('join', H2, '--env-file', file);
    expect(r.code, r.stderr).toBe(0);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    joined = readEnvFile(file);
    const key = JSON.parse(readFileSync(path.join(dataDir, 'secrets', 'encryption-key.json'), 'utf8'));
    expect(joined).toEqual({
      HOST_NAME: H2,
      TEMPORAL_ADDRESS: `${BIND}:${ports.temporal}`,
      DATABASE_URL: t.databaseUrl,
      ENCRYPTION_KEY_ID: key.id,
      ENCRYPTION_KEY: Buffer.from(key.key, 'base64').toString('hex'),
      HOST_LOST_SECONDS: String(LOST),
      // the release store and the S3 settings every host needs to read it
      RELEASE_STORE: 's3://releases/vc',
      S3_ENDPOINT: s3.endpoint,
      S3_REGION: 'us-east-1',
      S3_ACCESS_KEY_ID: s3.accessKeyId,
      S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
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
      held: { memory_mb: 0 },
      environments: 0,
      // the key it loaded from the joined settings, the control plane's
      encryption_key_id: joined.ENCRYPTION_KEY_ID,
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

  // environments deployed through npm start's API, on the hosts the scenarios below share
  let client: Agent;
  let envs: Record<'a' | 'b', { id: string; port: number }>;
  const hostOf = async (envId: string) =>
    (await t.deps.knex('servers').where({ environment_id: envId, role: 'web' }).first()) as {
      host: string;
      status: string;
    };
  const agentOf = (name: string) => agents.filter((a) => a.out.includes(`Host ${name} joined`)).at(-1)!;
  const recorded = (name: string, envId: string) =>
    existsSync(path.join(agentOf(name).dataDir, 'environments', envId, 'current.json'));
  const newestMove = (envId: string) =>
    t.deps.knex('tasks').where({ environment_id: envId, type: 'move' }).orderBy('created_at', 'desc').first();

  /**
   * The addresses the edge serves the environment's port from (its HAProxy's servers not in maintenance), each
   * at an instance port of that host's range; no server of the backend at a sandbox address (10.x: every block).
   */
  async function servedFrom(port: number): Promise<string[]> {
    const ranges: Record<string, [number, number]> = { '127.0.0.2': [31000, 31099], '127.0.0.3': [31100, 31199] };
    const servers = await backendServers(dataDir, port);
    expect(servers.length).toBeGreaterThan(0);
    for (const s of servers) {
      expect(s.addr.startsWith('10.'), `${s.addr}:${s.port}`).toBe(false);
      const range = ranges[s.addr];
      expect(range, `${s.addr}:${s.port}`).toBeDefined();
      expect(s.port).toBeGreaterThanOrEqual(range[0]);
      expect(s.port).toBeLessThanOrEqual(range[1]);
    }
    return servers.filter((s) => s.on).map((s) => s.addr);
  }

  async function deploy(envId: string) {
    const res = await client.post(`/environments/${envId}/deploy`);
    expect(res.status, res.text).toBe(202);
    const task = await waitForTask(t, client, res.body.id, { timeoutMs: 120_000 });
    expect(task.status, `${task.error}\n${await taskLog(t, client, task.id)}`).toBe('succeeded');
  }

  /** The app's web process on `name`: its pid from the supervisor's current.json there, its cwd under that DATA_DIR. */
  function appOn(name: string, envId: string): { pid: number; cwd: string } {
    const dir = agentOf(name).dataDir;
    const state = JSON.parse(readFileSync(path.join(dir, 'environments', envId, 'current.json'), 'utf8'));
    const pid = (state.pids?.[0] ?? state.pid) as number;
    return { pid, cwd: readlinkSync(`/proc/${pid}/cwd`) };
  }

  it(`a third host joins; environments deployed through the API spread over ${H2} and ${H3}, each answering through the edge from its own host`, async () => {
    const file = path.join(dataDir, 'ha-h3.env');
    const r = await hosts('join', H3, '--env-file', file);
    expect(r.code, r.stderr).toBe(0);
    joined3 = readEnvFile(file);
    expect(joined3).toMatchObject({ HOST_NAME: H3, RELEASE_STORE: 's3://releases/vc', S3_ENDPOINT: s3.endpoint });
    await joinedOf(startAgent(agentDir(), H3_ENV, joined3), H3);
    expect((await listed()).map((h) => [h.name, h.status])).toEqual([
      [CP, 'ready'],
      [H2, 'ready'],
      [H3, 'ready'],
    ]);

    const repo = createSharedAppRepo();
    writeFileSync(repo.gate, '');
    repo.commit('v1');
    const owner = await createUser(t);
    const team = await createTeam(t, owner);
    const project = await createProject(t, team, { repository_url: repo.dir });
    // a signed-in owner on the started API: this context's session (npm start has this context's keys)
    const session = await sessionAgent(t, owner);
    client = new Agent(`http://127.0.0.1:${ports.api}/api/vc/v1`);
    for (const [k, v] of session.cookies) client.cookies.set(k, v);
    client.csrf = session.csrf;
    const made: Record<string, { id: string; port: number }> = {};
    for (const name of ['a', 'b']) {
      const res = await client.post(`/projects/${project.id}/environments`, { name, git_ref: 'main' });
      expect(res.status, res.text).toBe(201);
      made[name] = await t.deps.knex('environments').where({ id: res.body.id }).first('id', 'port');
    }
    envs = made as typeof envs;
    // the most free memory: H2 and H3 2048 (a tie: by name) -> H2, then H3 (2048 against 1536)
    expect((await hostOf(envs.a.id)).host).toBe(H2);
    expect((await hostOf(envs.b.id)).host).toBe(H3);
    await Promise.all([deploy(envs.a.id), deploy(envs.b.id)]);
    // their releases went to the S3 store (s3rver keeps each object as a `._S3rver_object` file)
    const objects = readdirSync(path.join(s3.directory, 'releases'), { recursive: true, encoding: 'utf8' });
    expect(objects.filter((f) => f.endsWith('._S3rver_object')).length).toBeGreaterThan(0);

    for (const [env, name, address] of [
      [envs.a, H2, '127.0.0.2'],
      [envs.b, H3, '127.0.0.3'],
    ] as const) {
      expect(await fetchEnvironment(env.port)).toEqual({ status: 200, text: 'v1' });
      // its process runs under its host's DATA_DIR, and only there
      const other = name === H2 ? H3 : H2;
      expect(recorded(name, env.id)).toBe(true);
      expect(recorded(other, env.id)).toBe(false);
      expect(appOn(name, env.id).cwd.startsWith(`${agentOf(name).dataDir}/`)).toBe(true);
      // the edge reaches it at its host's address and an instance port of its range, never a sandbox address
      expect(await servedFrom(env.port)).toEqual([address]);
    }
  }, 300_000);

  it(`a drain of ${H2} under load (wrk) moves its environment to ${H3} with no failed request`, async () => {
    // under load from before the drain until after the move has ended (wrk's 100 s are a bound, not the length)
    const load = runWrk(`http://127.0.0.1:${envs.a.port}/`, 100);
    await new Promise((r) => setTimeout(r, 2000));
    const drained = await hosts('drain', H2);
    expect(drained.code, drained.stderr).toBe(0);
    expect(drained.stdout).toMatch(/a: moving \(task /);
    // the edge switched to the new instance, then the old one stopped
    const move = await until('the move of a', async () => {
      const m = await newestMove(envs.a.id);
      return m?.status === 'succeeded' && m.phases?.old_stopped && m;
    });
    await until(`${H2} drained`, async () => (await listed()).find((h) => h.name === H2)?.status === 'drained').catch(
      async (e) => {
        const state = {
          hosts: await t.deps.knex('hosts').select('name', 'status', 'lost_at'),
          servers: await t.deps.knex('servers').select('environment_id', 'role', 'host', 'status'),
          moves: await t.deps.knex('tasks').where({ type: 'move' }).select('id', 'status', 'environment_id', 'error'),
        };
        throw new Error(`${e.message}\n${JSON.stringify(state, null, 1)}`);
      },
    );
    // a second more of requests after the move (old instance stopped) ended, all to the new host
    await new Promise((r) => setTimeout(r, 1000));
    const result = await load.stop();
    expect(move.params.reason).toBe('drain');
    expect(result.requests, result.output).toBeGreaterThan(100);
    expect(result.non2xx, result.output).toBe(0);
    expect(result.socketErrors, result.output).toBe(0);
    expect((await hostOf(envs.a.id)).host).toBe(H3);
    expect(recorded(H2, envs.a.id)).toBe(false);
    expect(recorded(H3, envs.a.id)).toBe(true);
    expect(await servedFrom(envs.a.port)).toEqual(['127.0.0.3']);
    expect(await fetchEnvironment(envs.a.port)).toEqual({ status: 200, text: 'v1' });
    expect((await hosts('undrain', H2)).code).toBe(0);
  }, 120_000);

  it(`a SIGKILL of ${H3} and all it started: its stateless environment answers from another host within 60 s; a deploy of its stateful one succeeds elsewhere`, async () => {
    // b holds data in its volume (H3's STORAGE_ROOTS); H3's sampler says so, and that a's is empty
    const volume = await environmentVolume(t.deps.knex, [path.join(agentOf(H3).dataDir, 'disks')], envs.b.id);
    mkdirSync(volume, { recursive: true });
    writeFileSync(path.join(volume, 'upload.txt'), 'kept here');
    const sampled = (envId: string, held: boolean) =>
      t.deps
        .knex('resource_samples')
        .where({ environment_id: envId })
        .where('volume_bytes', held ? '>' : '=', 0)
        .where('at', '>', t.deps.knex.raw("now() - interval '5 seconds'"))
        .first();
    await until('samples of both', async () => (await sampled(envs.b.id, true)) && (await sampled(envs.a.id, false)));

    const h3 = agentOf(H3);
    process.kill(-h3.child.pid!, 'SIGKILL');
    killProcessesMentioning(h3.dataDir);
    killProcessesUnder(h3.dataDir);
    const lostAt = Date.now();
    await until(
      'a answering from another host',
      async () => {
        const m = await newestMove(envs.a.id);
        return (
          m?.status === 'succeeded' &&
          m.params.reason === 'lost' &&
          (await fetchEnvironment(envs.a.port)).status === 200
        );
      },
      60_000,
    );
    const took = (Date.now() - lostAt) / 1000;
    console.log(`${H3} SIGKILLed -> its stateless environment answering from another host: ${took.toFixed(1)} s`);
    expect(took).toBeLessThan(60);
    expect((await hostOf(envs.a.id)).host).toBe(H2); // the most free memory: H2 2048 against CP's 1024
    expect(await fetchEnvironment(envs.a.port)).toEqual({ status: 200, text: 'v1' });
    expect(await servedFrom(envs.a.port)).toEqual(['127.0.0.2']);
    expect((await listed()).find((h) => h.name === H3)?.status).toBe('lost');
    expect(await hostOf(envs.b.id)).toMatchObject({ host: H3, status: 'host_lost' });
    expect((await fetchEnvironment(envs.b.port)).status).toBe(503);

    // a deploy of b, placed on the lost host: it places b again and succeeds there
    await deploy(envs.b.id);
    expect(await hostOf(envs.b.id)).toMatchObject({ host: H2, status: 'running' });
    expect(await fetchEnvironment(envs.b.port)).toEqual({ status: 200, text: 'v1' });
    expect(await servedFrom(envs.b.port)).toEqual(['127.0.0.2']);
  }, 240_000);

  it(`${H3} coming back stops its stale instances and stays drained`, async () => {
    const dir = agentOf(H3).dataDir;
    expect(recorded(H3, envs.a.id)).toBe(true); // what it ran before it died
    expect(recorded(H3, envs.b.id)).toBe(true);
    await joinedOf(startAgent(dir, H3_ENV, joined3), H3);
    await until(
      'the stale instances stopped, their records removed',
      () => !recorded(H3, envs.a.id) && !recorded(H3, envs.b.id),
    );
    await until('the loss cleared', async () => !(await t.deps.knex('hosts').where({ name: H3 }).first()).lost_at);
    expect((await listed()).find((h) => h.name === H3)?.status).toBe('drained');
    expect(processesMentioning(path.join(dir, 'environments'))).toEqual([]);
    expect(await fetchEnvironment(envs.a.port)).toEqual({ status: 200, text: 'v1' });
    expect(await fetchEnvironment(envs.b.port)).toEqual({ status: 200, text: 'v1' });
    expect((await hosts('undrain', H3)).code).toBe(0);
  }, 120_000);

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
    for (let i = 0; i < 8; i++) {
      const res = await agent.post(`/projects/${project.id}/environments`, { name: `placed-${i}`, git_ref: 'main' });
      expect(res.status, res.text).toBe(201);
      placedOn.push((await t.deps.knex('servers').where({ environment_id: res.body.id, role: 'web' }).first()).host);
    }
    // free memory (a and b run on H2): H3 2048, CP 1024, H2 1024 -> H3, H3, then 1024 each (a tie: by name)
    // CP, H2, H3, then 512 each: CP, H2, H3
    expect(placedOn).toEqual([H3, H3, CP, H2, H3, CP, H2, H3]);
    const refused = await agent.post(`/projects/${project.id}/environments`, { name: 'one-too-many', git_ref: 'main' });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('no_capacity');
    expect(refused.body.error.message).toContain('no plan fits now');
    expect(refused.body.error.message).not.toContain(H2);
    const list = await listed();
    expect(list.map((h) => [h.name, h.used.memory_mb, h.environments])).toEqual([
      [CP, 1024, 2],
      [H2, 2048, 4],
      [H3, 2048, 4],
    ]);
    expect(await metrics()).toContain(`vc_host_environments{host="${H2}"} 4`);
  }, 120_000);

  it('drain and undrain set the status', async () => {
    expect((await hosts('drain', H2)).code).toBe(0);
    expect((await listed()).find((h) => h.name === H2)?.status).toBe('draining');
    expect((await health()).hosts).toEqual({ ready: 2, draining: 1, drained: 0, lost: 0 });
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
    // stopped longer than HOST_LOST_SECONDS with environments on it, it may have been taken as lost meanwhile
    // (the host watch runs every 5 s): then it is back `drained`, to undrain
    await until('the loss cleared', async () => !(await t.deps.knex('hosts').where({ name: H2 }).first()).lost_at);
    const status = (await listed()).find((h) => h.name === H2)?.status;
    expect(['ready', 'drained']).toContain(status);
    if (status === 'drained') expect((await hosts('undrain', H2)).code).toBe(0);
    expect((await listed()).find((h) => h.name === H2)?.status).toBe('ready');
  }, 240_000);

  it(`a SIGKILLed agent is lost after HOST_LOST_SECONDS (${LOST} s)`, async () => {
    const last = agents.at(-1)!;
    expect(last.out).toContain(`Host ${H2} joined`);
    killProcessesMentioning(last.dataDir);
    await until('ha-h2 lost', async () => (await listed()).find((h) => h.name === H2)?.status === 'lost');
    expect((await listed()).find((h) => h.name === CP)?.status).toBe('ready');
    expect((await health()).hosts).toEqual({ ready: 2, draining: 0, drained: 0, lost: 1 });
    expect(await metrics()).toContain(`vc_host_ready{host="${H2}"} 0`);
  }, 120_000);
});
