import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cgroupHost,
  environmentUsage,
  holdProcess,
  limitEnv,
  removeEnvironmentCgroups,
} from '../../../host/provider/cgroups';
import { processAlive, runStep } from '../../../host/provider/run-step';
import { cgroupSubtree } from '../../../host/provider/host-identity';
import { Supervisor } from '../../../host/provider/supervisor';
import { sandboxedProcess } from '../../helpers/processes';
import { useTestContext } from '../../helpers/context';
import { servedByEdge } from '../../helpers/served';

/**
 * Real limits on this host's cgroups: what a process is held to is seen from outside (it is killed past its
 * memory, its CPU time is capped), not only what it is told. CI runs as root on a host with cgroups.
 */
const env = { PATH: process.env.PATH, HOME: process.env.HOME };
/** Allocates (and touches) `MB` mebibytes, one at a time, then says so. */
const HOG = (mb: number) =>
  `node -e 'const a=[];for(let i=0;i<${mb};i++)a.push(Buffer.alloc(1<<20,1));console.log("allocated ${mb}")'`;

const SERVER = `
const http = require('node:http');
const fs = require('node:fs');
const held = [];
http.createServer((req, res) => {
  if (req.url === '/healthz') { res.writeHead(200); return res.end('ok'); }
  if (req.url === '/slow') { setTimeout(() => { res.writeHead(200); res.end('slow ' + process.pid); }, 2000); return; }
  if (req.url === '/hog') { for (let i = 0; i < 400; i++) held.push(Buffer.alloc(1 << 20, 1)); res.writeHead(200); return res.end('survived'); }
  const cg = fs.readFileSync('/proc/self/cgroup', 'utf8').split('\\n').find((l) => /:memory:/.test(l)) || '';
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ pid: process.pid, cpu: process.env.VC_CPU, memory: process.env.VC_MEMORY_MB, cgroup: cg.split(':')[2] }));
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

const t = useTestContext({ edge: true });
const served = servedByEdge(t);
let root: string;
const envIds: string[] = [];
const newEnv = () => {
  const id = randomUUID();
  envIds.push(id);
  return id;
};

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'vc-cgroups-'));
  await chmod(root, 0o711); // the sandbox binds the environment's HOME as its uid: others must get through
});

afterAll(async () => {
  for (const id of envIds) await removeEnvironmentCgroups(id);
  await rm(root, { recursive: true, force: true });
});

function runHeld(envId: string, command: string, limits: { cpu: number; memoryMb: number; maxProcesses?: number }) {
  const lines: string[] = [];
  return runStep({
    command,
    cwd: root,
    env: { ...env, ...limitEnv(limits) },
    timeoutMs: 30_000,
    onLine: (_s, l) => lines.push(l),
    onSpawn: (pid) => holdProcess(envId, 'build', pid, limits),
  }).then((r) => ({ ...r, lines }));
}

describe('cgroups on this host', () => {
  it('are usable (cgroup v1 here; v2 where the host has it)', () => {
    const h = cgroupHost();
    expect(h.kind, h.kind === 'none' ? h.reason : '').not.toBe('none');
  });

  it('kill a step that allocates past its plan, and let the same step run within a bigger one', async () => {
    const small = await runHeld(newEnv(), HOG(200), { cpu: 1, memoryMb: 64 });
    expect(small.lines).not.toContain('allocated 200');
    expect(small.signal ?? `exit ${small.exitCode}`).toMatch(/SIGKILL|exit 137/);

    const big = await runHeld(newEnv(), HOG(200), { cpu: 1, memoryMb: 512 });
    expect(big).toMatchObject({ exitCode: 0, lines: ['allocated 200'] });
  });

  it('tell the step its plan in VC_CPU and VC_MEMORY_MB', async () => {
    const r = await runHeld(newEnv(), 'echo "$VC_CPU $VC_MEMORY_MB"', { cpu: 0.5, memoryMb: 256 });
    expect(r.lines).toEqual(['0.5 256']);
  });

  it("cap a busy step's CPU time to its share and count it in the environment's usage", async () => {
    const envId = newEnv();
    const started = Date.now();
    const r = await runHeld(envId, `node -e 'const end=Date.now()+1500;while(Date.now()<end){}'`, {
      cpu: 0.2,
      memoryMb: 256,
    });
    const wall = (Date.now() - started) / 1000;
    expect(r.exitCode).toBe(0);
    const used = environmentUsage(envId)!.cpuNs / 1e9;
    // a busy loop unlimited would use ~1 s of CPU a second of wall time; held to 0.2 CPU it gets ~0.2
    expect(used).toBeGreaterThan(0.1);
    expect(used).toBeLessThan(0.35 * wall + 0.15);
  });

  it("hold a step to its plan's max_processes: forks past it fail, within it they run", async () => {
    // node spawns and reports: no shell retry loop on EAGAIN
    const FORKS = `node -e 'const {spawn}=require("node:child_process");let ok=0,no=0;const k=[];for(let i=0;i<200;i++){const c=spawn("sleep",["5"],{stdio:"ignore"});c.on("error",()=>{});if(c.pid){ok++;k.push(c)}else no++}console.log(ok+" "+no);for(const c of k)c.kill("SIGKILL")'`;
    const held = await runHeld(newEnv(), FORKS, { cpu: 1, memoryMb: 256, maxProcesses: 64 });
    const [ok, refused] = held.lines[0].split(' ').map(Number);
    expect(ok + refused).toBe(200);
    expect(ok).toBeLessThan(64);
    expect(refused).toBeGreaterThan(136);
    const roomy = await runHeld(newEnv(), FORKS, { cpu: 1, memoryMb: 256, maxProcesses: 1024 });
    expect(roomy.lines).toEqual(['200 0']);
  });

  it('place what the process already started too, and remove leaves once their processes are gone', async () => {
    const envId = newEnv();
    // the inner shell is forked at once (before the placement, usually); it is found and moved, grep inherits
    const r = await runHeld(envId, `sh -c 'sh -c "sleep 0.3; grep memory /proc/self/cgroup"'`, {
      cpu: 1,
      memoryMb: 128,
    });
    expect(r.lines[0]).toContain(`/${cgroupSubtree()}/${envId}/build-`);
    const h = cgroupHost();
    const memoryDir = path.join(h.kind === 'v1' ? h.memory : h.kind === 'v2' ? h.dir : '/nonexistent', envId);
    await removeEnvironmentCgroups(envId);
    expect(existsSync(memoryDir)).toBe(false);
  });
});

describe('the supervisor holds web processes to the web server plan', () => {
  let supervisor: Supervisor;
  let envId: string;
  let releaseDir: string;
  let port: number;

  beforeAll(async () => {
    // an environment the edge serves (HAProxy), from the routes this supervisor publishes
    ({ id: envId, port } = await served.environment());
    envIds.push(envId);
    supervisor = new Supervisor({
      dataDir: path.join(root, 'data'),
      stopGraceMs: 1000,
      restartBackoff: { initialMs: 100 },
      publish: served.publish,
    });
    releaseDir = path.join(root, 'release');
    await mkdir(releaseDir, { recursive: true });
    await writeFile(path.join(releaseDir, 'server.js'), SERVER);
  });
  afterAll(async () => {
    await supervisor?.stopAll();
  });

  /** What the web process says of itself, and its host pid (it runs in its own pid namespace). */
  const info = async () => {
    const me = (await (await fetch(`http://127.0.0.1:${port}/`)).json()) as {
      pid: number;
      cpu: string;
      memory: string;
      cgroup: string;
    };
    return { ...me, hostPid: sandboxedProcess(envId, 'web', me.pid)?.pid ?? -1 };
  };

  it('starts the web process inside a leaf limited to the plan, told the plan', async () => {
    const live = await supervisor.goLive({
      envId,
      port,
      releaseId: 'r1',
      releaseDir,
      manifest: { build: [], deploy: [], web: 'node server.js', health: '/healthz' },
      env,
      healthTimeoutMs: 10_000,
      limits: { cpu: 0.5, memoryMb: 128 },
    });
    expect(live.ok).toBe(true);
    const me = await info();
    expect(me).toMatchObject({ cpu: '0.5', memory: '128' });
    expect(me.cgroup).toContain(`/${cgroupSubtree()}/${envId}/web-`);
    expect(me.hostPid).toBeGreaterThan(0); // found from the host in that leaf
    const h = cgroupHost();
    if (h.kind === 'v1') {
      const leaf = path.join(h.memory, envId, path.basename(String(me.cgroup)));
      expect(readFileSync(path.join(leaf, 'memory.limit_in_bytes'), 'utf8').trim()).toBe(String(128 * 1024 * 1024));
      const cpuLeaf = path.join(h.cpu, envId, path.basename(String(me.cgroup)));
      expect(readFileSync(path.join(cpuLeaf, 'cpu.cfs_quota_us'), 'utf8').trim()).toBe('50000');
    }
  });

  it('a web process that allocates past its plan is killed, then restarted by the supervisor', async () => {
    const before = await info();
    expect(before.hostPid).toBeGreaterThan(0);
    const hog = await fetch(`http://127.0.0.1:${port}/hog`).then(
      (r) => r.status,
      () => 'connection lost',
    );
    expect(hog).not.toBe(200);
    // the edge answers as soon as the connection drops; the killed process may take a moment to be gone
    const killed = Date.now() + 5000;
    while (processAlive(before.hostPid) && Date.now() < killed) await new Promise((r) => setTimeout(r, 50));
    expect(processAlive(before.hostPid)).toBe(false);
    const deadline = Date.now() + 15_000;
    let after: Awaited<ReturnType<typeof info>> | null = null;
    while (Date.now() < deadline && !after) {
      after = await info().catch(() => null);
      if (!after) await new Promise((r) => setTimeout(r, 100));
    }
    expect(after?.hostPid).not.toBe(before.hostPid);
    expect(after?.memory).toBe('128');
  });

  it('restartWeb moves the web process to a new plan without a failed request', async () => {
    const before = await info();
    expect(before.hostPid).toBeGreaterThan(0);
    let failures = 0;
    let answered = 0;
    let polling = true;
    const poller = (async () => {
      while (polling) {
        try {
          const r = await fetch(`http://127.0.0.1:${port}/healthz`);
          if (r.status === 200) answered++;
          else failures++;
        } catch {
          failures++;
        }
      }
    })();
    // a request under way at the old process when its successor takes its place finishes there
    const slow = fetch(`http://127.0.0.1:${port}/slow`).then(
      async (res) => `${res.status} ${await res.text()}`,
      (err) => String(err),
    );
    let oldStopped = () => {};
    const stopped = new Promise<void>((res) => {
      oldStopped = res;
    });
    const r = await supervisor.restartWeb(envId, {
      limits: { cpu: 1, memoryMb: 512 },
      healthTimeoutMs: 10_000,
      onPhase: (phase) => phase === 'old_stopped' && oldStopped(),
    });
    await new Promise((res) => setTimeout(res, 200));
    polling = false;
    await poller;
    expect(r).toEqual({ ok: true, restarted: true });
    expect(await slow).toBe(`200 slow ${before.pid}`);
    expect(failures).toBe(0);
    expect(answered).toBeGreaterThan(0);
    const after = await info();
    expect(after).toMatchObject({ cpu: '1', memory: '512' });
    expect(after.hostPid).not.toBe(before.hostPid);
    await stopped; // drained, then stopped, after the restart returned
    expect(processAlive(before.hostPid)).toBe(false);
    // and the new plan holds: 400 MiB now fits
    expect(await (await fetch(`http://127.0.0.1:${port}/hog`)).text()).toBe('survived');
  });
});
