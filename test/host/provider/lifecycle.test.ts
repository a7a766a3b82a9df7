import type { WebCrash } from '../../../db/queries/machines';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkout, GitError, listBranchCommits, redactUrl, resolveRef } from '../../../host/git';
import { buildRelease, runDeploySteps, type BuildResult } from '../../../host/provider/releases';
import { processAlive } from '../../../host/provider/run-step';
import { netnsName, openJail, removeNetwork } from '../../../host/provider/sandbox';
import { currentRelease, statePath, Supervisor } from '../../../host/provider/supervisor';
import { useTestContext } from '../../helpers/context';
import { servedByEdge } from '../../helpers/served';
import { until } from '../../helpers/until';

const SERVER = `
const http = require('node:http');
const fs = require('node:fs');
const version = fs.readFileSync(__dirname + '/VERSION', 'utf8').trim();
http.createServer((req, res) => {
  if (req.url === '/healthz') { res.writeHead(200); return res.end('ok'); }
  if (req.url === '/broken') { res.writeHead(500); return res.end('no'); }
  if (req.method === 'POST') { res.writeHead(201, { 'set-cookie': ['a=1', 'b=2'] }); return req.pipe(res); }
  res.writeHead(200, { 'content-type': 'text/plain', 'x-release': version });
  res.end(version + ' ' + process.env.GREETING + ' built=' + fs.existsSync(__dirname + '/BUILT'));
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

let root: string;
let repo: string;
let dataDir: string;
let supervisor: Supervisor;
const shas: Record<string, string> = {};
const env = { PATH: process.env.PATH, GREETING: 'hello' };
const pidsSeen: number[] = [];
/** Each environment's public port (its sandbox is derived from it). */
const ports: Record<string, number> = {};
/** The environments' ids (rows the edge reads), by name. */
const ids: Record<string, string> = {};
const t = useTestContext({ edge: true });
const served = servedByEdge(t);

function sh(cwd: string, cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8' }).trim();
}

async function commit(name: string, files: Record<string, string>): Promise<string> {
  for (const [file, text] of Object.entries(files)) await writeFile(path.join(repo, file), text);
  sh(repo, 'git', ['add', '-A']);
  sh(repo, 'git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qm', name]);
  shas[name] = sh(repo, 'git', ['rev-parse', 'HEAD']);
  return shas[name];
}

async function get(port: number, p = '/'): Promise<{ status: number; text: string; release: string | null }> {
  const res = await fetch(`http://127.0.0.1:${port}${p}`);
  return { status: res.status, text: await res.text(), release: res.headers.get('x-release') };
}

const lines: string[] = [];
const onLine = (_s: 'stdout' | 'stderr', l: string) => void lines.push(l);
/** Where git may read: the test's root (the repository), never DATA_DIR. */
const access = () => ({ dataDir, localRepositoryRoots: [root], outboundAllowedHosts: [] });
const git = () => ({ access: access() });
const jail = (envId: string) => openJail(dataDir, envId, ports[envId]);
const build = async (
  envId: string,
  releaseId: string,
  sha: string,
  extra: Partial<Parameters<typeof buildRelease>[0]> = {},
) =>
  buildRelease({
    dataDir,
    jail: await jail(envId),
    envId,
    releaseId,
    repo: { url: repo },
    access: access(),
    sha,
    env,
    stepTimeoutMs: 10_000,
    onLine,
    ...extra,
  });

function okBuild(r: BuildResult): Extract<BuildResult, { ok: true }> {
  if (!r.ok) throw new Error(`build failed: ${r.message}`);
  return r;
}

/** Resolves once the instances the last go-live or scale replaced have stopped (they drain after it returned). */
let oldStopped: Promise<void> = Promise.resolve();
const watchOld = () => {
  let stopped = () => {};
  oldStopped = new Promise((r) => {
    stopped = r;
  });
  return (phase: string) => phase === 'old_stopped' && stopped();
};

const goLive = (
  envId: string,
  port: number,
  releaseId: string,
  r: Extract<BuildResult, { ok: true }>,
  healthTimeoutMs = 5000,
  taskId?: string,
) =>
  supervisor.goLive({
    envId,
    port,
    releaseId,
    releaseDir: r.releaseDir,
    manifest: r.manifest,
    env,
    healthTimeoutMs,
    onLine,
    onPhase: watchOld(),
    ...(taskId ? { taskId } : {}),
  });

/** What the supervisor told onWebCrash, in order. */
const crashReports: Array<{ envId: string; crash: WebCrash | null }> = [];
/** Where the reports of the restored supervisor begin. */
let restoredAt = 0;

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'vc-provider-'));
  await chmod(root, 0o711); // the environments' uids pass through to their own directories
  for (const name of ['prod', 'staging', 'static']) {
    const e = await served.environment(name);
    ids[name] = e.id;
    ports[name] = e.port;
    ports[e.id] = e.port;
  }
  repo = path.join(root, 'repo');
  dataDir = path.join(root, 'data');
  sh(root, 'git', ['init', '-q', '-b', 'main', repo]);
  await commit('v1', {
    'server.js': SERVER,
    VERSION: 'v1\n',
    'service.yaml':
      'build: ["echo building $GREETING", "echo yes > BUILT"]\ndeploy: ["echo migrating"]\nweb: node server.js\nhealth: /healthz\n',
  });
  supervisor = new Supervisor({
    dataDir,
    stopGraceMs: 1000,
    // a restart counts as steady after 1.5 s up (30 s by default)
    restartBackoff: { initialMs: 100, stableMs: 1500 },
    publish: served.publish,
    onWebCrash: async (envId, crash) => {
      crashReports.push({ envId, crash });
    },
  });
});

afterAll(async () => {
  await supervisor?.stopAll();
  for (const port of Object.values(ports)) await removeNetwork(port);
  for (const pid of pidsSeen) if (processAlive(pid)) process.kill(pid, 'SIGKILL');
  await rm(root, { recursive: true, force: true });
});

describe('git', () => {
  it('resolves branches, HEAD and abbreviated shas; refuses unknown refs', async () => {
    expect(await resolveRef({ url: repo }, 'main', git())).toBe(shas.v1);
    expect(await resolveRef({ url: repo }, '', git())).toBe(shas.v1);
    expect(await resolveRef({ url: repo }, shas.v1.slice(0, 10), git())).toBe(shas.v1);
    await expect(resolveRef({ url: repo }, 'nope', git())).rejects.toMatchObject({ code: 'ref_not_found' });
    await expect(resolveRef({ url: path.join(root, 'missing') }, 'main', git())).rejects.toBeInstanceOf(GitError);
  });

  it('checks out an exact commit without .git and lists branch commits', async () => {
    const dir = path.join(root, 'co');
    await checkout({ repo: { url: repo }, sha: shas.v1, dir, ...git() });
    expect(await readFile(path.join(dir, 'VERSION'), 'utf8')).toBe('v1\n');
    expect(existsSync(path.join(dir, '.git'))).toBe(false);
    const commits = await listBranchCommits({ url: repo }, 'main', git());
    expect(commits.map((c) => c.sha)).toEqual([shas.v1]);
    expect(commits[0].subject).toBe('v1');
  });

  it('never prints credentials of a URL', () => {
    expect(redactUrl('cloning https://bob:s3cret@git.example.com/x.git failed')).toBe(
      'cloning https://git.example.com/x.git failed',
    );
  });
});

describe('releases and the supervisor', () => {
  let port: number;
  let v1: Extract<BuildResult, { ok: true }>;

  it('builds v1 (steps run in order, in the release dir) and puts it live', async () => {
    port = ports.prod;
    v1 = okBuild(await build(ids.prod, 'r1', shas.v1));
    expect(v1.reused).toBe(false);
    expect(v1.releaseDir).toBe(path.join(dataDir, 'environments', ids.prod, 'releases', 'r1'));
    expect(lines).toContain('building hello');
    expect(existsSync(path.join(v1.releaseDir, '.git'))).toBe(false);

    const deploy = await runDeploySteps({
      releaseDir: v1.releaseDir,
      manifest: v1.manifest,
      env,
      jail: await jail(ids.prod),
      stepTimeoutMs: 5000,
      onLine,
    });
    expect(deploy).toEqual({ ok: true });
    expect(lines).toContain('migrating');

    expect(await goLive(ids.prod, port, 'r1', v1)).toEqual({
      ok: true,
      alreadyLive: false,
      internalPort: expect.any(Number),
    });
    expect(await get(port)).toMatchObject({ status: 200, text: 'v1 hello built=true', release: 'v1' });
    expect(await currentRelease(dataDir, ids.prod)).toMatchObject({ releaseId: 'r1', port, web: true });
    expect((await stat(statePath(dataDir, ids.prod))).mode & 0o777).toBe(0o600);
    expect(await readFile(path.join(dataDir, 'environments', ids.prod, 'web.log'), 'utf8')).toContain(
      'release r1: starting',
    );
  });

  it('is idempotent: the same release is neither rebuilt nor restarted', async () => {
    const pid = supervisor.status(ids.prod)!.pid;
    expect(okBuild(await build(ids.prod, 'r1', shas.v1)).reused).toBe(true);
    expect(await goLive(ids.prod, port, 'r1', v1)).toMatchObject({ ok: true, alreadyLive: true });
    expect(supervisor.status(ids.prod)!.pid).toBe(pid);
  });

  it('a go-live of the live release by another task (a redeploy) starts a new process; a retry of it switches nothing', async () => {
    const before = supervisor.status(ids.prod)!.pid!;
    pidsSeen.push(before);
    expect(await goLive(ids.prod, port, 'r1', v1, 5000, 'task-a')).toMatchObject({ ok: true, alreadyLive: false });
    const after = supervisor.status(ids.prod)!.pid!;
    pidsSeen.push(after);
    expect(after).not.toBe(before);
    expect((await get(port)).text).toBe('v1 hello built=true');
    await oldStopped; // drained, then stopped, after the go-live returned
    expect(processAlive(before)).toBe(false);
    // the same task again (its activity retried): already live, the same process
    expect(await goLive(ids.prod, port, 'r1', v1, 5000, 'task-a')).toMatchObject({ ok: true, alreadyLive: true });
    expect(supervisor.status(ids.prod)!.pid).toBe(after);
    // recorded for a worker that restarts
    expect(JSON.parse(await readFile(statePath(dataDir, ids.prod), 'utf8')).taskId).toBe('task-a');
  });

  it('puts v2 live and stops v1', async () => {
    await commit('v2', { VERSION: 'v2\n' });
    expect(await resolveRef({ url: repo }, 'main', git())).toBe(shas.v2);
    const v1Pid = supervisor.status(ids.prod)!.pid!;
    pidsSeen.push(v1Pid);
    const v2 = okBuild(await build(ids.prod, 'r2', shas.v2));
    expect(await goLive(ids.prod, port, 'r2', v2)).toMatchObject({ ok: true, alreadyLive: false });
    expect((await get(port)).text).toBe('v2 hello built=true');
    await oldStopped;
    expect(processAlive(v1Pid)).toBe(false);
    // bodies stream through the proxy both ways; status and repeated headers pass
    const big = 'x'.repeat(1_000_000);
    const echoed = await fetch(`http://127.0.0.1:${port}/echo`, { method: 'POST', body: big });
    expect(echoed.status).toBe(201);
    expect(echoed.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await echoed.text()).toBe(big);
    expect((await currentRelease(dataDir, ids.prod))?.releaseId).toBe('r2');
  });

  it('refuses a release whose health never answers 2xx; the previous one keeps serving', async () => {
    await commit('v3', { VERSION: 'v3\n', 'service.yaml': 'web: node server.js\nhealth: /broken\n' });
    const v3 = okBuild(await build(ids.prod, 'r3', shas.v3));
    const r = await goLive(ids.prod, port, 'r3', v3, 800);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(/health check \/broken did not answer 2xx .*status 500/);
    // what to do, in the task's log
    expect(lines).toContain(
      '==> Its health check did not answer 2xx in time: make that path answer 2xx once the app is up, then deploy again',
    );
    expect((await get(port)).text).toBe('v2 hello built=true');
    expect((await currentRelease(dataDir, ids.prod))?.releaseId).toBe('r2');
  });

  it('fails a build at its failing step and leaves no release dir; v2 keeps serving', async () => {
    await commit('v4', {
      VERSION: 'v4\n',
      'service.yaml': 'build: ["echo first", "exit 3", "echo never"]\nweb: node server.js\n',
    });
    const r = await build(ids.prod, 'r4', shas.v4);
    expect(r).toMatchObject({
      ok: false,
      reason: 'step_failed',
      failedStep: { index: 1, command: 'exit 3', exitCode: 3 },
    });
    expect(lines).not.toContain('never');
    expect(existsSync(path.join(dataDir, 'environments', ids.prod, 'releases', 'r4'))).toBe(false);
    expect((await get(port)).text).toBe('v2 hello built=true');
  });

  it('fails a build with an invalid manifest, naming each fault', async () => {
    await commit('v5', { 'service.yaml': 'build: npm ci\ncolour: red\n' });
    const r = await build(ids.prod, 'r5', shas.v5);
    expect(r).toMatchObject({
      ok: false,
      reason: 'manifest_invalid',
      fields: { build: 'expected an array of strings (line 1)', colour: 'unknown key (line 2)' },
    });
  });

  it('restarts the live web process when it dies', async () => {
    const before = supervisor.status(ids.prod)!;
    pidsSeen.push(before.pid!);
    process.kill(before.pid!, 'SIGKILL');
    const deadline = Date.now() + 5000;
    let text = '';
    while (Date.now() < deadline) {
      const s = supervisor.status(ids.prod)!;
      if (s.running && s.pid !== before.pid) {
        const r = await get(port).catch(() => null);
        if (r?.status === 200) {
          text = r.text;
          break;
        }
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(text).toBe('v2 hello built=true');
    expect(supervisor.status(ids.prod)!.restarts).toBe(1);
  });

  it('tells onWebCrash of the exit (SIGKILL), then null once the restart has stayed up its steady time', async () => {
    const mine = () => crashReports.filter((r) => r.envId === ids.prod).map((r) => r.crash);
    // the first go-live of the environment in this process cleared whatever an earlier worker left
    expect(mine()[0]).toBeNull();
    const at = mine().findIndex((c) => c !== null);
    expect(mine()[at]).toEqual({
      since: expect.any(String),
      exit_code: null,
      signal: 'SIGKILL',
      exits: 1,
      last_exit_at: expect.any(String),
    });
    const deadline = Date.now() + 5000;
    while (mine().length < at + 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(mine().slice(at)).toEqual([expect.objectContaining({ exits: 1 }), null]);
  });

  it('records a release without web as live and answers 503 "no web process"', async () => {
    await commit('v6', { 'service.yaml': 'build: []\n' });
    const staticPort = ports.static;
    const r = okBuild(await build(ids.static, 's1', shas.v6));
    expect(await goLive(ids.static, staticPort, 's1', r)).toMatchObject({ ok: true });
    expect(await get(staticPort)).toMatchObject({ status: 503 });
    expect((await currentRelease(dataDir, ids.static))?.web).toBe(false);
  });

  it('brings every environment back with restoreAll after stopAll', async () => {
    const stagingPort = ports.staging;
    const s1 = okBuild(await build(ids.staging, 'r1', shas.v1));
    expect(await goLive(ids.staging, stagingPort, 'r1', s1)).toMatchObject({ ok: true });
    const livePids = [supervisor.status(ids.prod)!.pid!, supervisor.status(ids.staging)!.pid!];
    pidsSeen.push(...livePids);

    await supervisor.stopAll();
    for (const pid of livePids) expect(processAlive(pid)).toBe(false);
    expect((await get(port)).status).toBeGreaterThanOrEqual(500); // the edge: nothing answers behind it

    // as after a host restart: the environments' network namespaces are gone too
    await removeNetwork(port);
    expect(existsSync(`/run/netns/${netnsName(port)}`)).toBe(false);
    supervisor = new Supervisor({
      dataDir,
      stopGraceMs: 1000,
      restartBackoff: { initialMs: 100, stableMs: 6000 },
      publish: served.publish,
      onWebCrash: async (envId, crash) => {
        crashReports.push({ envId, crash });
      },
    });
    restoredAt = crashReports.length;
    const restored = await supervisor.restoreAll();
    const byId = (a: { envId: string }, b: { envId: string }) => a.envId.localeCompare(b.envId);
    expect(restored.sort(byId)).toEqual(
      [
        { envId: ids.prod, releaseId: 'r2', ok: true },
        { envId: ids.staging, releaseId: 'r1', ok: true },
        { envId: ids.static, releaseId: 's1', ok: true },
      ].sort(byId),
    );
    expect((await get(port)).text).toBe('v2 hello built=true');
    expect((await get(stagingPort)).text).toBe('v1 hello built=true');
    pidsSeen.push(supervisor.status(ids.prod)!.pid!, supervisor.status(ids.staging)!.pid!);
  });

  it("keeps a restored environment's crash record until its instances have stayed up; their own exit replaces it, no clear between", async () => {
    // a worker's restart: an app that kept exiting before goes on exiting; cleared at once, the server's record
    // would begin a new run of exits, and the team would hear of the same crash loop again
    const since = (envId: string) => crashReports.slice(restoredAt).filter((r) => r.envId === envId);
    expect(since(ids.prod)).toEqual([]);
    const pid = supervisor.status(ids.prod)!.pid!;
    process.kill(pid, 'SIGKILL');
    await until('the exit of the restored instance', async () => since(ids.prod).length > 0 || undefined, {
      timeoutMs: 5000,
    });
    expect(since(ids.prod)[0].crash).toMatchObject({ signal: 'SIGKILL', exits: 1 });
    // steady ones are cleared once they have stayed up (6 s here), the restarted one 6 s after its restart
    await until(
      'both environments to be cleared',
      async () => (since(ids.prod).length >= 2 && since(ids.staging).length >= 1) || undefined,
      { timeoutMs: 25_000 },
    );
    expect(since(ids.prod).map((r) => r.crash)).toEqual([expect.objectContaining({ exits: 1 }), null]);
    expect(since(ids.staging).map((r) => r.crash)).toEqual([null]);
    expect((await get(port)).text).toBe('v2 hello built=true');
  });

  it('scales to 2 instances; restoreAll after stopAll brings both back; scaling to 1 stops the extra one', async () => {
    expect(await supervisor.scale(ids.prod, { instances: 2, healthTimeoutMs: 10_000 })).toEqual({
      ok: true,
      instances: 2,
      changed: true,
    });
    const two = supervisor.status(ids.prod)!.instances;
    expect(two.map((i) => [i.slot, i.running])).toEqual([
      [1, true],
      [2, true],
    ]);
    expect(two[0].internalPort).not.toBe(two[1].internalPort);
    const pids = two.map((i) => i.pid!);
    pidsSeen.push(...pids);
    await supervisor.stopAll();
    for (const pid of pids) expect(processAlive(pid)).toBe(false);

    supervisor = new Supervisor({
      dataDir,
      stopGraceMs: 1000,
      restartBackoff: { initialMs: 100 },
      publish: served.publish,
    });
    await supervisor.restoreAll();
    const back = supervisor.status(ids.prod)!.instances;
    expect(back.map((i) => [i.slot, i.running])).toEqual([
      [1, true],
      [2, true],
    ]);
    pidsSeen.push(...back.map((i) => i.pid!), supervisor.status(ids.staging)!.pid!);
    for (let i = 0; i < 4; i++) expect((await get(port)).text).toBe('v2 hello built=true');

    expect(await supervisor.scale(ids.prod, { instances: 1, healthTimeoutMs: 10_000, onPhase: watchOld() })).toEqual({
      ok: true,
      instances: 1,
      changed: true,
    });
    expect(supervisor.status(ids.prod)!.instances).toHaveLength(1);
    await oldStopped;
    expect(processAlive(back[1].pid!)).toBe(false);
    expect(processAlive(back[0].pid!)).toBe(true);
    expect((await get(port)).text).toBe('v2 hello built=true');
  });

  it('retires an environment: its web process stops and its network namespace goes', async () => {
    const pid = supervisor.status(ids.staging)!.pid!;
    expect(existsSync(`/run/netns/${netnsName(ports.staging)}`)).toBe(true);
    await supervisor.retire(ids.staging);
    expect(processAlive(pid)).toBe(false);
    expect(existsSync(`/run/netns/${netnsName(ports.staging)}`)).toBe(false);
    expect((await get(ports.staging)).status).toBe(503); // the edge serves the port: no route behind it
    expect((await get(port)).text).toBe('v2 hello built=true');
  });
});
