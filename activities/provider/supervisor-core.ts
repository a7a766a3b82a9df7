/**
 * What every operation of the supervisor (supervisor.ts) shares: its options, the environments' runtime
 * records and their per-environment lock, the proxies (or the edge's publish hook), starting a web process
 * and writing the environment's state file.
 */
import path from 'node:path';
import type { Limits } from './cgroups';
import { startProxy } from './proxy';
import { type StateFile, writeStateFile } from './supervisor-state';
import type { Runtime, SupervisorOptions } from './supervisor-types';
import { proxyRoute, publishedRoute, spawnWeb } from './supervisor-web';
import type { Backoff, WebProcess } from './web-process';

export abstract class SupervisorCore {
  protected readonly envs = new Map<string, Runtime>();
  protected readonly dataDir: string;
  protected readonly host: string;
  protected readonly graceMs: number;
  protected readonly backoff: Backoff;
  protected readonly restoreTimeoutMs: number;
  protected readonly protectEnv: SupervisorOptions['protectEnv'];
  protected readonly proxies: boolean;
  protected readonly publishRoute: SupervisorOptions['publish'];

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

  protected runtime(envId: string): Runtime {
    let rt = this.envs.get(envId);
    if (!rt) {
      rt = { envId, proxy: null, live: null, maintenance: { on: false }, lock: Promise.resolve() };
      this.envs.set(envId, rt);
    }
    return rt;
  }

  protected exclusive<T>(envId: string, fn: () => Promise<T>): Promise<T> {
    const rt = this.runtime(envId);
    const next = rt.lock.then(fn, fn);
    rt.lock = next.catch(() => undefined);
    return next;
  }

  /** Tells the edge where the environment is served now (SupervisorOptions.publish). */
  protected async publish(rt: Runtime): Promise<void> {
    if (!this.publishRoute) return;
    await this.publishRoute(rt.envId, publishedRoute(rt));
  }

  protected async ensureProxy(rt: Runtime, port: number): Promise<void> {
    if (rt.proxy?.port === port) return;
    if (!this.proxies) {
      // the edge serves the port; the supervisor only remembers it
      rt.proxy = { port, close: async () => undefined };
      return;
    }
    const proxy = await startProxy(this.host, port, () => proxyRoute(rt));
    const old = rt.proxy;
    rt.proxy = proxy;
    await old?.close();
  }

  protected async closeProxy(rt: Runtime): Promise<void> {
    const p = rt.proxy;
    rt.proxy = null;
    await p?.close();
  }

  protected spawnWeb(
    envId: string,
    port: number,
    releaseId: string,
    releaseDir: string,
    command: string,
    env: Record<string, string | undefined>,
    limits?: Limits,
  ): Promise<WebProcess> {
    const taken = this.envs.get(envId)?.live?.web?.port;
    return spawnWeb({
      dataDir: this.dataDir,
      envId,
      port,
      releaseId,
      releaseDir,
      command,
      env,
      limits,
      backoff: this.backoff,
      taken: taken ? [taken] : [],
      onPid: (web) => {
        // record the new pid so that a later worker can find an orphaned group
        const rt = this.envs.get(envId);
        if (rt?.live?.web === web) void this.writeState(rt).catch(() => undefined);
      },
    });
  }

  protected async writeState(rt: Runtime): Promise<void> {
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
    await writeStateFile(this.dataDir, state);
  }
}
