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
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { removeCgroupBase, removeEnvironmentCgroups, type Limits } from './cgroups';
import type { OnLine } from './run-step';
import { closeJail } from './sandbox';
import { SupervisorCore } from './supervisor-core';
import { readState, STATE_FILE, type StateFile, statePath } from './supervisor-state';
import type { EnvironmentStatus, GoLiveOptions, GoLiveResult, RestartOptions, RestartResult } from './supervisor-types';
import { killOrphan, safe, WEB_LOG } from './supervisor-web';
import { waitReady, type WebProcess } from './web-process';

export { currentRelease, statePath, type CurrentRelease } from './supervisor-state';
export type {
  EnvironmentStatus,
  GoLiveOptions,
  GoLiveResult,
  PublishedRoute,
  RestartOptions,
  RestartResult,
  SupervisorOptions,
} from './supervisor-types';

export class Supervisor extends SupervisorCore {
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
    if (s.pid && !handOver) await killOrphan(s.pid, s.releaseDir, this.graceMs);
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
    if (s.pid && handOver) await killOrphan(s.pid, s.releaseDir, this.graceMs);
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
}
