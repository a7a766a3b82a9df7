/**
 * The supervisor, owned by the worker process: per environment, a reverse proxy on the environment's public
 * port and the live release's `web` process behind it on a private port.
 *
 * Going live: start the new process on a fresh port, wait for `health` to answer 2xx (or, without health,
 * for the port to accept connections) within healthTimeoutMs, then point the proxy at it, record the release
 * in `<dataDir>/environments/<envId>/current.json` (temp file + rename) and stop the previous process group.
 * If anything fails before the switch, the new process is killed and the previous release keeps serving.
 *
 * current.json holds the environment given to the web process, so that restoreAll() can bring it back
 * after a worker restart; it is written with mode 0600, sealed when `protectEnv` is given (it holds the
 * user's variables, secrets included), and `currentRelease()` never returns that part.
 *
 * Every web process runs in its environment's sandbox (sandbox.ts, set up again by restoreAll after a host
 * restart): the proxy reaches it at the sandbox's address; retire() removes the sandbox's network.
 */
import { appendFile, chmod, mkdir, readdir, readFile, realpath, rename, rm, writeFile } from 'node:fs/promises';
import { closeSync, openSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { holdProcess, limitEnv, removeCgroupBase, removeEnvironmentCgroups, type Limits } from './cgroups';
import type { Manifest } from './manifest';
import { startProxy, type Proxy, type Route } from './proxy';
import { webErrorLogPath } from '../../logs/error-tail';
import { environmentDir } from './releases';
import { groupAlive, killGroup, type OnLine } from './run-step';
import { closeJail, openJail } from './sandbox';
import { delay, freePort, waitReady, WebProcess, type Backoff } from './web-process';

export interface SupervisorOptions {
  dataDir: string;
  /** Address the environments' public ports listen on (default 127.0.0.1). */
  listenHost?: string;
  /** SIGTERM to SIGKILL when a web process is stopped (default 5000 ms). */
  stopGraceMs?: number;
  restartBackoff?: Partial<Backoff>;
  /** Readiness wait of each environment in restoreAll (default 30000 ms). */
  restoreHealthTimeoutMs?: number;
  /** Seals the web processes' environment in current.json (system/crypto.ts under the console's key). */
  protectEnv?: { seal(text: string): string; open(sealed: string): string };
  /**
   * Whether this supervisor listens on the environments' public ports itself (default true). False when
   * the edge, a process of its own, serves them: the supervisor then only publishes where each
   * environment's web process answers, through `publish`.
   */
  proxies?: boolean;
  /** Called after every change of where an environment is served (null: taken off this host). */
  publish?: (envId: string, route: PublishedRoute | null) => Promise<void>;
}

/** Where an environment is served, as the edge needs it: host AND port (the host may be a namespace's). */
export type PublishedRoute =
  | { kind: 'upstream'; host: string; port: number; releaseId: string }
  | { kind: 'unavailable'; text: string; releaseId: string | null };

export interface RestartOptions {
  envId: string;
  /** Complete new environment of the web process (PORT is set by the supervisor). */
  env: Record<string, string | undefined>;
  healthTimeoutMs: number;
  onLine?: OnLine;
}

export interface GoLiveOptions {
  envId: string;
  port: number;
  releaseId: string;
  releaseDir: string;
  manifest: Manifest;
  /** Complete environment of the web process (PORT is set by the supervisor). */
  env: Record<string, string | undefined>;
  healthTimeoutMs: number;
  onLine?: OnLine;
  /** The plan of the environment's web server: each web process is held to it (cgroups.ts) and told it. */
  limits?: Limits;
}

export type GoLiveResult =
  | { ok: true; alreadyLive: boolean; internalPort: number | null }
  | { ok: false; message: string };

export interface CurrentRelease {
  envId: string;
  releaseId: string;
  releaseDir: string;
  port: number;
  web: boolean;
  since: string;
  maintenance: { on: boolean; note?: string };
}

interface StateFile extends CurrentRelease {
  version: 1;
  manifest: Manifest;
  env?: Record<string, string | undefined>;
  /** The env, sealed (SupervisorOptions.protectEnv). */
  envSealed?: string;
  pid: number | null;
  limits?: Limits;
}

export type RestartResult = { ok: true; restarted: boolean } | { ok: false; message: string };

export interface EnvironmentStatus {
  releaseId: string;
  port: number;
  internalPort: number | null;
  pid: number | null;
  running: boolean;
  restarts: number;
}

interface Live {
  releaseId: string;
  releaseDir: string;
  manifest: Manifest;
  env: Record<string, string | undefined>;
  since: string;
  web: WebProcess | null;
  limits?: Limits;
}

interface Runtime {
  envId: string;
  proxy: Proxy | null;
  live: Live | null;
  maintenance: { on: boolean; note?: string };
  lock: Promise<unknown>;
}

const STATE_FILE = 'current.json';
const WEB_LOG = 'web.log';

export function statePath(dataDir: string, envId: string): string {
  return path.join(environmentDir(dataDir, envId), STATE_FILE);
}

/** The release recorded live for an environment, or null. */
export async function currentRelease(dataDir: string, envId: string): Promise<CurrentRelease | null> {
  const s = await readState(statePath(dataDir, envId));
  if (!s) return null;
  return {
    envId: s.envId,
    releaseId: s.releaseId,
    releaseDir: s.releaseDir,
    port: s.port,
    web: s.web,
    since: s.since,
    maintenance: s.maintenance ?? { on: false },
  };
}

export class Supervisor {
  private readonly envs = new Map<string, Runtime>();
  private readonly dataDir: string;
  private readonly host: string;
  private readonly graceMs: number;
  private readonly backoff: Backoff;
  private readonly restoreTimeoutMs: number;
  private readonly protectEnv: SupervisorOptions['protectEnv'];
  private readonly proxies: boolean;
  private readonly publishRoute: SupervisorOptions['publish'];

  constructor(opts: SupervisorOptions) {
    this.dataDir = path.resolve(opts.dataDir);
    this.host = opts.listenHost ?? '127.0.0.1';
    this.graceMs = opts.stopGraceMs ?? 5000;
    this.backoff = { initialMs: 500, maxMs: 30_000, stableMs: 30_000, ...opts.restartBackoff };
    this.restoreTimeoutMs = opts.restoreHealthTimeoutMs ?? 30_000;
    this.protectEnv = opts.protectEnv;
    this.proxies = opts.proxies ?? true;
    this.publishRoute = opts.publish;
  }

  /** Puts a built release live (see the file comment). Idempotent: the release already live is left running. */
  goLive(opts: GoLiveOptions): Promise<GoLiveResult> {
    return this.exclusive(opts.envId, () => this.goLiveNow(opts));
  }

  private async goLiveNow(o: GoLiveOptions): Promise<GoLiveResult> {
    const say = (line: string) => safe(o.onLine, `==> ${line}`);
    const rt = this.runtime(o.envId);
    if (rt.live?.releaseId === o.releaseId && rt.proxy?.port === o.port) {
      say(`Release ${o.releaseId} is already live on port ${o.port}`);
      return { ok: true, alreadyLive: true, internalPort: rt.live.web?.port ?? null };
    }

    try {
      await this.ensureProxy(rt, o.port);
    } catch (err) {
      const message = `port ${o.port} is not available: ${(err as Error).message}`;
      safe(o.onLine, message, 'stderr');
      return { ok: false, message };
    }

    let web: WebProcess | null = null;
    if (o.manifest.web) {
      try {
        web = await this.spawnWeb(o.envId, o.port, o.releaseId, o.releaseDir, o.manifest.web, o.env, o.limits);
      } catch (err) {
        if (!rt.live) await this.closeProxy(rt);
        throw err;
      }
      say(`Started "${o.manifest.web}" for release ${o.releaseId} (pid ${web.pid ?? '?'}); output goes to ${WEB_LOG}`);
      const ready = await waitReady(web, o.manifest.health, o.healthTimeoutMs);
      if (!ready.ok) {
        await web.stop(this.graceMs);
        const message = `release ${o.releaseId} did not become ready: ${ready.message}`;
        safe(o.onLine, message, 'stderr');
        if (!rt.live) await this.closeProxy(rt);
        return { ok: false, message };
      }
      say(o.manifest.health ? `${o.manifest.health} answered ${ready.status}` : `port ${web.port} accepts connections`);
    } else {
      say('No web command in service.yaml: the environment answers 503 "no web process"');
    }

    const previous = rt.live;
    rt.live = {
      releaseId: o.releaseId,
      releaseDir: o.releaseDir,
      manifest: o.manifest,
      env: o.env,
      since: new Date().toISOString(),
      web,
      limits: o.limits,
    };
    web?.supervise();
    try {
      await this.writeState(rt);
      await this.publish(rt);
    } catch (err) {
      rt.live = previous;
      await web?.stop(this.graceMs);
      throw err;
    }
    say(`Release ${o.releaseId} is live on port ${o.port}`);
    if (previous?.web) await previous.web.stop(this.graceMs);
    return { ok: true, alreadyLive: false, internalPort: web?.port ?? null };
  }

  /**
   * Restarts the live release's web process with a new environment, without a build: a new process on a
   * fresh port, ready (health 2xx, or the port accepting) before the proxy switches to it; on failure the
   * running process keeps serving with its old environment.
   */
  restartWithEnv(o: RestartOptions): Promise<GoLiveResult> {
    return this.exclusive(o.envId, async () => {
      const say = (line: string) => safe(o.onLine, `==> ${line}`);
      const rt = this.runtime(o.envId);
      const live = rt.live;
      if (!live) return { ok: false, message: 'no release is live on this environment' };
      if (!live.manifest.web) {
        rt.live = { ...live, env: o.env };
        await this.writeState(rt);
        say('No web command in service.yaml: nothing to restart; the new variables are kept for the next start');
        return { ok: true, alreadyLive: true, internalPort: null };
      }
      const web = await this.spawnWeb(
        o.envId,
        rt.proxy?.port ?? 0,
        live.releaseId,
        live.releaseDir,
        live.manifest.web,
        o.env,
        live.limits,
      );
      say(
        `Started "${live.manifest.web}" for release ${live.releaseId} with the current variables (pid ${web.pid ?? '?'})`,
      );
      const ready = await waitReady(web, live.manifest.health, o.healthTimeoutMs);
      if (!ready.ok) {
        await web.stop(this.graceMs);
        const message = `the restarted process did not become ready: ${ready.message}`;
        safe(o.onLine, message, 'stderr');
        return { ok: false, message };
      }
      say(
        live.manifest.health
          ? `${live.manifest.health} answered ${ready.status}`
          : `port ${web.port} accepts connections`,
      );
      rt.live = { ...live, env: o.env, web };
      web.supervise();
      try {
        await this.writeState(rt);
        await this.publish(rt);
      } catch (err) {
        rt.live = live;
        await web.stop(this.graceMs);
        throw err;
      }
      if (live.web) await live.web.stop(this.graceMs);
      say(`Release ${live.releaseId} serves with the current variables`);
      return { ok: true, alreadyLive: false, internalPort: web.port };
    });
  }

  /** Brings back every environment recorded in a current.json (after a worker start). */
  async restoreAll(): Promise<{ envId: string; releaseId: string; ok: boolean; message?: string }[]> {
    const root = path.join(this.dataDir, 'environments');
    let names: string[] = [];
    try {
      names = await readdir(root);
    } catch {
      return [];
    }
    return Promise.all(
      names.map(async (envId) => {
        const state = await readState(path.join(root, envId, STATE_FILE));
        if (!state) return null;
        return this.exclusive(envId, () => this.restore(state));
      }),
    ).then((all) => all.filter((r): r is NonNullable<typeof r> => r !== null));
  }

  private async restore(s: StateFile): Promise<{ envId: string; releaseId: string; ok: boolean; message?: string }> {
    const rt = this.runtime(s.envId);
    const base = { envId: s.envId, releaseId: s.releaseId };
    if (rt.live) return { ...base, ok: true };
    // Behind the edge, the orphan of the previous worker keeps serving until its successor is ready.
    const handOver = Boolean(this.publishRoute);
    if (s.pid && !handOver) await this.killOrphan(s.pid, s.releaseDir);
    rt.maintenance = s.maintenance ?? { on: false };
    try {
      await this.ensureProxy(rt, s.port);
    } catch (err) {
      return { ...base, ok: false, message: `port ${s.port} is not available: ${(err as Error).message}` };
    }
    let env: Record<string, string | undefined>;
    try {
      env = s.envSealed && this.protectEnv ? JSON.parse(this.protectEnv.open(s.envSealed)) : (s.env ?? {});
    } catch (err) {
      return { ...base, ok: false, message: `the recorded environment cannot be opened: ${(err as Error).message}` };
    }
    let web: WebProcess | null = null;
    if (s.manifest.web) {
      try {
        web = await this.spawnWeb(s.envId, s.port, s.releaseId, s.releaseDir, s.manifest.web, env, s.limits);
      } catch (err) {
        await this.closeProxy(rt);
        return { ...base, ok: false, message: `its sandbox could not be set up: ${(err as Error).message}` };
      }
    }
    rt.live = {
      releaseId: s.releaseId,
      releaseDir: s.releaseDir,
      manifest: s.manifest,
      env,
      since: s.since,
      web,
      limits: s.limits,
    };
    web?.supervise(); // it is the live release: whatever happens, keep it running
    const ready = web && handOver ? await waitReady(web, s.manifest.health, this.restoreTimeoutMs) : null;
    await this.writeState(rt);
    await this.publish(rt);
    if (s.pid && handOver) await this.killOrphan(s.pid, s.releaseDir);
    if (!web) return { ...base, ok: true };
    const done = ready ?? (await waitReady(web, s.manifest.health, this.restoreTimeoutMs));
    return done.ok ? { ...base, ok: true } : { ...base, ok: false, message: done.message };
  }

  /** Stops every web process group and closes every proxy (worker shutdown). current.json files stay. */
  async stopAll(): Promise<void> {
    await Promise.all(
      [...this.envs.values()].map((rt) =>
        this.exclusive(rt.envId, async () => {
          await rt.live?.web?.stop(this.graceMs);
          await this.closeProxy(rt);
          rt.live = null;
          await removeEnvironmentCgroups(rt.envId);
        }),
      ),
    );
    this.envs.clear();
    removeCgroupBase();
  }

  /** Takes an environment off this host (environment deleted): process, proxy and current.json. */
  async retire(envId: string): Promise<void> {
    await this.exclusive(envId, async () => {
      const rt = this.runtime(envId);
      const port = rt.proxy?.port ?? (await readState(statePath(this.dataDir, envId)))?.port;
      await rt.live?.web?.stop(this.graceMs);
      await this.closeProxy(rt);
      rt.live = null;
      await rm(statePath(this.dataDir, envId), { force: true });
      if (port) await closeJail(this.dataDir, envId, port);
      await removeEnvironmentCgroups(envId);
      this.envs.delete(envId);
      await this.publishRoute?.(envId, null);
    });
  }

  /** Maintenance on: the proxy answers 503 with the note; off: traffic flows again. Recorded in current.json. */
  async setMaintenance(envId: string, on: boolean, note?: string): Promise<void> {
    await this.exclusive(envId, async () => {
      const rt = this.runtime(envId);
      rt.maintenance = on ? { on, ...(note ? { note } : {}) } : { on: false };
      if (rt.live) await this.writeState(rt);
      await this.publish(rt);
    });
  }

  /**
   * Restarts the live release's web process (reboot, resize: with `limits`, the new plan): a new process is
   * started and must be ready (health) before the proxy moves to it and the old one is stopped; if it is not
   * ready, it is stopped and the old one keeps serving. The supervisor runs one web process per environment,
   * so "one instance at a time" is this one replacement. With `env`, that is merged into the process's
   * environment (data put back, a new database service). Nothing live: `restarted: false`.
   */
  restartWeb(
    envId: string,
    o: { limits?: Limits; env?: Record<string, string>; healthTimeoutMs: number; onLine?: OnLine },
  ): Promise<RestartResult> {
    return this.exclusive(envId, async () => {
      const say = (line: string) => safe(o.onLine, `==> ${line}`);
      const rt = this.runtime(envId);
      const live = rt.live;
      if (!live) return { ok: true, restarted: false };
      const limits = o.limits ?? live.limits;
      if (!live.manifest.web) {
        live.limits = limits;
        await this.writeState(rt);
        return { ok: true, restarted: false };
      }
      if (!rt.proxy) return { ok: true, restarted: false };
      const nextEnv = { ...live.env, ...(o.env ?? {}) };
      const web = await this.spawnWeb(
        envId,
        rt.proxy.port,
        live.releaseId,
        live.releaseDir,
        live.manifest.web,
        nextEnv,
        limits,
      );
      say(`Started a new web process for release ${live.releaseId} (pid ${web.pid ?? '?'})`);
      const ready = await waitReady(web, live.manifest.health, o.healthTimeoutMs);
      if (!ready.ok) {
        await web.stop(this.graceMs);
        const message = `the new web process did not become ready: ${ready.message}; the old one keeps serving`;
        safe(o.onLine, message, 'stderr');
        return { ok: false, message };
      }
      const old = live.web;
      rt.live = { ...live, env: nextEnv, web, limits };
      web.supervise();
      await this.writeState(rt);
      await this.publish(rt);
      say(`The new web process serves; stopping the old one (pid ${old?.pid ?? '?'})`);
      await old?.stop(this.graceMs);
      return { ok: true, restarted: true };
    });
  }

  status(envId: string): EnvironmentStatus | null {
    const rt = this.envs.get(envId);
    if (!rt?.live || !rt.proxy) return null;
    const web = rt.live.web;
    return {
      releaseId: rt.live.releaseId,
      port: rt.proxy.port,
      internalPort: web?.port ?? null,
      pid: web?.pid ?? null,
      running: web?.isRunning ?? false,
      restarts: web?.restarts ?? 0,
    };
  }

  // ---------------------------------------------------------------------------------------------------

  private runtime(envId: string): Runtime {
    let rt = this.envs.get(envId);
    if (!rt) {
      rt = { envId, proxy: null, live: null, maintenance: { on: false }, lock: Promise.resolve() };
      this.envs.set(envId, rt);
    }
    return rt;
  }

  private exclusive<T>(envId: string, fn: () => Promise<T>): Promise<T> {
    const rt = this.runtime(envId);
    const next = rt.lock.then(fn, fn);
    rt.lock = next.catch(() => undefined);
    return next;
  }

  private route(rt: Runtime): Route {
    if (rt.maintenance.on) return { kind: 'unavailable', text: rt.maintenance.note || 'under maintenance' };
    const web = rt.live?.web;
    if (!rt.live) return { kind: 'unavailable', text: 'no release is live' };
    if (!web) return { kind: 'unavailable', text: 'no web process' };
    return { kind: 'upstream', host: web.host, port: web.port, agent: web.agent };
  }

  /** Tells the edge where the environment is served now (SupervisorOptions.publish). */
  private async publish(rt: Runtime): Promise<void> {
    if (!this.publishRoute) return;
    const live = rt.live;
    const web = live?.web;
    const route: PublishedRoute =
      live && web
        ? { kind: 'upstream', host: web.host, port: web.port, releaseId: live.releaseId }
        : {
            kind: 'unavailable',
            text: live ? 'no web process' : 'no release is live',
            releaseId: live?.releaseId ?? null,
          };
    await this.publishRoute(rt.envId, route);
  }

  private async ensureProxy(rt: Runtime, port: number): Promise<void> {
    if (rt.proxy?.port === port) return;
    if (!this.proxies) {
      // the edge serves the port; the supervisor only remembers it
      rt.proxy = { port, close: async () => undefined };
      return;
    }
    const proxy = await startProxy(this.host, port, () => this.route(rt));
    const old = rt.proxy;
    rt.proxy = proxy;
    await old?.close();
  }

  private async closeProxy(rt: Runtime): Promise<void> {
    const p = rt.proxy;
    rt.proxy = null;
    await p?.close();
  }

  private async spawnWeb(
    envId: string,
    port: number,
    releaseId: string,
    releaseDir: string,
    command: string,
    env: Record<string, string | undefined>,
    limits?: Limits,
  ): Promise<WebProcess> {
    const jail = await openJail(this.dataDir, envId, port);
    const logPath = path.join(environmentDir(this.dataDir, envId), WEB_LOG);
    closeSync(openSync(logPath, 'a', 0o600));
    await chmod(logPath, 0o600); // the worker's alone: not readable by any environment
    // The previous release keeps its port until the switch (same namespace): the new one takes another.
    const taken = this.envs.get(envId)?.live?.web?.port;
    let internal = await freePort();
    while (internal === taken) internal = await freePort();
    const web = new WebProcess({
      label: `release ${releaseId}`,
      command,
      cwd: releaseDir,
      env: limits ? { ...env, ...limitEnv(limits) } : env,
      jail,
      port: internal,
      logPath,
      errorLogPath: webErrorLogPath(this.dataDir, envId),
      backoff: this.backoff,
      onStart: (pid) => {
        if (limits) {
          try {
            holdProcess(envId, 'web', pid, limits);
          } catch (err) {
            const line = `[${new Date().toISOString()}] could not hold pid ${pid} to its plan: ${(err as Error).message}\n`;
            void appendFile(logPath, line).catch(() => undefined);
          }
        }
        // record the new pid so that a later worker can find an orphaned group
        const rt = this.envs.get(envId);
        if (rt?.live?.web === web) void this.writeState(rt).catch(() => undefined);
      },
    });
    web.start();
    return web;
  }

  private async writeState(rt: Runtime): Promise<void> {
    const live = rt.live;
    if (!live || !rt.proxy) return;
    const state: StateFile = {
      version: 1,
      envId: rt.envId,
      releaseId: live.releaseId,
      releaseDir: live.releaseDir,
      port: rt.proxy.port,
      web: Boolean(live.manifest.web),
      since: live.since,
      maintenance: rt.maintenance,
      manifest: live.manifest,
      ...(this.protectEnv ? { envSealed: this.protectEnv.seal(JSON.stringify(live.env)) } : { env: live.env }),
      pid: live.web?.pid ?? null,
      limits: live.limits,
    };
    const file = statePath(this.dataDir, rt.envId);
    await mkdir(path.dirname(file), { recursive: true });
    const tmp = `${file}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
    await writeFile(tmp, JSON.stringify(state, null, 2), { mode: 0o600 });
    await rename(tmp, file);
  }

  /** A web process group left by a previous worker: killed if its pid still runs in that release dir. */
  private async killOrphan(pid: number, releaseDir: string): Promise<void> {
    let cwd: string;
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      return;
    }
    const dir = await realpath(releaseDir).catch(() => releaseDir);
    if (cwd !== dir || !groupAlive(pid)) return;
    killGroup(pid, 'SIGTERM');
    const deadline = Date.now() + this.graceMs;
    while (groupAlive(pid) && Date.now() < deadline) await delay(25);
    killGroup(pid, 'SIGKILL');
  }
}

async function readState(file: string): Promise<StateFile | null> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as StateFile;
  } catch {
    return null;
  }
}

function safe(onLine: OnLine | undefined, line: string, stream: 'stdout' | 'stderr' = 'stdout'): void {
  try {
    onLine?.(stream, line);
  } catch {
    // a failing log sink does not change the outcome
  }
}
