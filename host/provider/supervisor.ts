/**
 * The supervisor, owned by the worker process: per environment, the live release's `web` instances, published
 * to the edge (`publish`; HAProxy serves the environment's public port), each on a private
 * port of its own (1 by default; `scale` sets how many, VC_INSTANCE tells each its slot).
 *
 * Going live: start the new instances on fresh ports, wait for `health` to answer 2xx (or, without health,
 * for the port to accept connections) within healthTimeoutMs, then publish them to the edge, record the
 * release in `<dataDir>/environments/<envId>/current.json` (temp file + rename) and stop the previous
 * process groups. If anything fails before the switch, the new ones are killed and the previous release
 * keeps serving. Restarts (new variables, reboot, resize) replace the instances one at a time, each ready
 * before the one it replaces leaves the route; scaling down takes instances out of the route, lets the edge
 * learn it (drainMs), then stops them.
 *
 * current.json holds the environment given to the web process, so that restoreAll() can bring it back
 * after a worker restart; it is written with mode 0600, sealed when `protectEnv` is given (it holds the
 * user's variables, secrets included), and `currentRelease()` never returns that part.
 *
 * Every web process runs in its environment's sandbox (sandbox.ts, set up again by restoreAll after a host
 * restart): the edge reaches it at `HOST_ADDRESS:<instance port>` (instance-ports.ts: a port of INSTANCE_PORTS
 * forwarded into the sandbox, given back when the instance stops), never at the sandbox's address; retire()
 * removes the sandbox's network.
 */
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { removeCgroupBase, removeEnvironmentCgroups } from './cgroups';
import { closeJail } from './sandbox';
import { hostIdentity } from './host-identity';
import { slotsOf, tell } from './supervisor-core';
import { SupervisorInstances } from './supervisor-instances';
import { readState, STATE_FILE, type StateFile, statePath } from './supervisor-state';
import type { EnvironmentStatus, GoLiveOptions, GoLiveResult, PublishedRoute } from './supervisor-types';
import { killOrphan, killStrays, safe, WEB_LOG } from './supervisor-web';
import { waitReady, type WebProcess } from './web-process';

export { currentRelease, statePath } from './supervisor-state';
export type { PublishedRoute } from './supervisor-types';

export class Supervisor extends SupervisorInstances {
  /**
   * Puts a built release live (see the file comment), also the release live already (a redeploy: new
   * instances replace the running ones). Idempotent per task: a retry of the go-live of the task that put the
   * live release out switches nothing. The old instances drain and stop after it returns (`old_stopped`).
   */
  goLive(opts: GoLiveOptions): Promise<GoLiveResult> {
    return this.exclusive(opts.envId, () => this.goLiveNow(opts));
  }

  private async goLiveNow(o: GoLiveOptions): Promise<GoLiveResult> {
    const say = (line: string) => safe(o.onLine, `==> ${line}`);
    const rt = this.runtime(o.envId);
    const count = Math.max(1, o.instances ?? rt.live?.instances ?? 1);
    const same = o.taskId !== undefined ? rt.live?.taskId === o.taskId : rt.live?.releaseId === o.releaseId;
    if (rt.live && same && rt.served?.port === o.port) {
      say(`Release ${o.releaseId} is already live on port ${o.port}`);
      return { ok: true, alreadyLive: true, internalPort: rt.live.webs[0]?.port ?? null };
    }

    try {
      this.servePort(rt, o.port);
    } catch (err) {
      const message = `port ${o.port} is not available: ${(err as Error).message}`;
      safe(o.onLine, message, 'stderr');
      return { ok: false, message };
    }

    let webs: WebProcess[] = [];
    if (o.manifest.web) {
      const spec = {
        releaseId: o.releaseId,
        releaseDir: o.releaseDir,
        command: o.manifest.web,
        health: o.manifest.health,
      };
      let started: Awaited<ReturnType<Supervisor['startReady']>>;
      try {
        started = await this.startReady(
          o.envId,
          o.port,
          spec,
          slotsOf(1, count),
          o.env,
          o.limits,
          o.healthTimeoutMs,
          say,
          undefined,
          o.onPhase,
        );
      } catch (err) {
        if (!rt.live) this.unservePort(rt);
        throw err;
      }
      if (!started.ok) {
        const message = `release ${o.releaseId} did not become ready: ${started.message}`;
        safe(o.onLine, message, 'stderr');
        if (!rt.live) this.unservePort(rt);
        return { ok: false, message };
      }
      webs = started.webs;
      say(`Output of the web process goes to ${WEB_LOG}`);
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
      webs,
      instances: count,
      limits: o.limits,
      ...(o.taskId ? { taskId: o.taskId } : {}),
    };
    for (const web of webs) web.supervise();
    try {
      await this.writeState(rt);
      await this.publish(rt, { say: (line) => safe(o.onLine, line) });
    } catch (err) {
      // The previous route back before failing (recorded; an edge that did not apply the new one yet applies
      // it when it is back), then the new instances stop: the task never leaves a route to stopped processes.
      rt.live = previous;
      await this.writeState(rt).catch(() => undefined);
      await this.publish(rt, { wait: false }).catch(() => undefined);
      await Promise.all(webs.map((w) => w.stop(this.graceMs)));
      throw err;
    }
    tell(o.onPhase, 'edge_switched');
    say(`Release ${o.releaseId} is live on port ${o.port}${count > 1 ? ` (${count} instances)` : ''}`);
    if (previous?.webs.length) {
      say(`The previous instances (pid ${previous.webs.map((w) => w.pid ?? '?').join(', ')}) stop once drained`);
      this.stopLater(o.envId, previous.webs, o.onPhase);
    }
    return { ok: true, alreadyLive: false, internalPort: webs[0]?.port ?? null };
  }

  /**
   * Brings back every environment current.json records (worker start), with all its instances. `current`: the
   * values the console owns as they are now (where the volume and the database live), laid over the recorded
   * environment; the record can be older than a storage move or reshape whose worker did not live to restart
   * the web process.
   */
  async restoreAll(
    o: {
      current?: (envId: string) => Promise<Record<string, string>>;
      /**
       * Whether the environment is still placed on this host: one placed elsewhere meanwhile (moved while this
       * host was lost) is not restored: its orphans stop and its record goes (`left`), the edge untouched.
       */
      placedHere?: (envId: string) => Promise<boolean>;
    } = {},
  ): Promise<{ envId: string; releaseId: string; ok: boolean; message?: string; left?: true }[]> {
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
        // another host's record (agents sharing a DATA_DIR): not this host's to restore
        if (!state || (state.host && state.host !== hostIdentity().name)) return null;
        if (o.placedHere && !(await o.placedHere(envId).catch(() => true))) {
          await this.leave(envId);
          return { envId, releaseId: state.releaseId, ok: true, left: true as const };
        }
        return this.exclusive(envId, () => this.restore(state, o.current));
      }),
    ).then((all) => all.filter((r): r is NonNullable<typeof r> => r !== null));
  }

  private async restore(
    s: StateFile,
    current?: (envId: string) => Promise<Record<string, string>>,
  ): Promise<{ envId: string; releaseId: string; ok: boolean; message?: string }> {
    const rt = this.runtime(s.envId);
    const base = { envId: s.envId, releaseId: s.releaseId };
    if (rt.live) return { ...base, ok: true };
    const count = Math.max(1, s.instances ?? 1);
    const orphans = (s.pids ?? [s.pid]).filter((p): p is number => typeof p === 'number' && p > 0);
    // Their instance ports stay theirs (forwarded to them) until they are stopped.
    const orphanPorts = s.instancePorts ?? [];
    for (const port of orphanPorts) if (typeof port === 'number') this.reserved.add(port);
    // The previous worker's instances, and whatever else runs in the environment's web cgroups but `keep`
    // (an instance it started and recorded nowhere: killed in the middle of a restart or a move).
    const killOrphans = async (keep: number[]) => {
      await Promise.all(orphans.map((pid) => killOrphan(pid, s.releaseDir, this.graceMs, s.envId)));
      await killStrays(s.envId, keep, this.graceMs);
      await this.releaseOrphanPorts(orphanPorts);
    };
    // Behind the edge, the orphans of the previous worker keep serving until their successors are ready.
    const handOver = Boolean(this.publishRoute);
    if (!handOver) await killOrphans([]);
    rt.maintenance = s.maintenance ?? { on: false };
    try {
      this.servePort(rt, s.port);
    } catch (err) {
      return { ...base, ok: false, message: `port ${s.port} is not available: ${(err as Error).message}` };
    }
    let env: Record<string, string | undefined>;
    try {
      env = s.envSealed && this.protectEnv ? JSON.parse(this.protectEnv.open(s.envSealed)) : (s.env ?? {});
    } catch (err) {
      return { ...base, ok: false, message: `the recorded environment cannot be opened: ${(err as Error).message}` };
    }
    try {
      if (current) env = { ...env, ...(await current(s.envId)) };
    } catch {
      // the console's record cannot be read now: the recorded environment is the best there is
    }
    const webs: WebProcess[] = [];
    if (s.manifest.web) {
      const spec = { releaseId: s.releaseId, releaseDir: s.releaseDir, command: s.manifest.web };
      try {
        for (const slot of slotsOf(1, count))
          webs.push(
            await this.spawnWeb(
              s.envId,
              s.port,
              spec,
              slot,
              env,
              s.limits,
              webs.map((w) => w.port),
            ),
          );
      } catch (err) {
        await Promise.all(webs.map((w) => w.stop(this.graceMs)));
        this.unservePort(rt);
        return { ...base, ok: false, message: `its sandbox could not be set up: ${(err as Error).message}` };
      }
    }
    rt.live = {
      releaseId: s.releaseId,
      releaseDir: s.releaseDir,
      manifest: s.manifest,
      env,
      since: s.since,
      webs,
      instances: count,
      limits: s.limits,
      ...(s.taskId ? { taskId: s.taskId } : {}),
    };
    for (const web of webs) web.supervise(); // the live release: whatever happens, keep it running
    const readyAll = () => Promise.all(webs.map((w) => waitReady(w, s.manifest.health, this.restoreTimeoutMs)));
    const ready = webs.length && handOver ? await readyAll() : null;
    // a crash record the previous worker left stands until these have stayed up (supervisor-crash.ts)
    if (webs.length) this.crashes.restored(rt.envId, webs);
    await this.writeState(rt);
    // a worker start does not fail on an edge that is away (or cannot listen on the port yet): the route is
    // recorded, the edge applies it when back
    await this.publish(rt).catch((err) => {
      const type = (err as { type?: string }).type;
      if (type !== 'EdgeUnavailable' && type !== 'EdgePortHeld') throw err;
    });
    if (handOver) {
      // the edge learns the new upstreams before the previous worker's instances leave: no failed request
      await this.drain();
      await killOrphans(webs.map((w) => w.pid).filter((pid): pid is number => pid !== null));
    }
    if (!webs.length) return { ...base, ok: true };
    const bad = (ready ?? (await readyAll())).find((r) => !r.ok) as { ok: false; message: string } | undefined;
    return bad ? { ...base, ok: false, message: bad.message } : { ...base, ok: true };
  }

  /** Stops every web process group (worker shutdown). current.json files stay. */
  async stopAll(): Promise<void> {
    await Promise.all(
      [...this.envs.values()].map((rt) =>
        this.exclusive(rt.envId, async () => {
          await Promise.all((rt.live?.webs ?? []).map((w) => w.stop(this.graceMs)));
          await this.settle(rt.envId);
          this.unservePort(rt);
          rt.live = null;
          await removeEnvironmentCgroups(rt.envId);
        }),
      ),
    );
    this.envs.clear();
    removeCgroupBase();
  }

  /**
   * Takes an environment off this host (environment deleted): processes and current.json. The edge then
   * forgets it (`after` null), or answers it with `after` from the start (stop(): never a moment without it).
   */
  async retire(envId: string, knownPort?: number, after: PublishedRoute | null = null): Promise<void> {
    await this.exclusive(envId, async () => {
      if (after) await this.publishRoute?.(envId, after);
      const rt = this.runtime(envId);
      // `knownPort`: the environment's port when its state file may be gone (a retire run again)
      const port = rt.served?.port ?? (await readState(statePath(this.dataDir, envId)))?.port ?? knownPort;
      await Promise.all((rt.live?.webs ?? []).map((w) => w.stop(this.graceMs)));
      await this.settle(envId);
      this.unservePort(rt);
      rt.live = null;
      await rm(statePath(this.dataDir, envId), { force: true });
      if (port) await closeJail(this.dataDir, envId, port);
      await removeEnvironmentCgroups(envId);
      this.envs.delete(envId);
      await this.publishRoute?.(envId, after);
    });
  }

  /**
   * Stops this host's instances of an environment that now runs on another host (a move's old host, a rejoining
   * lost host): its supervised instances, the orphans its record names and whatever else runs in its cgroups
   * here; its record (when this host wrote it), network and cgroups go. The edge is left alone: it serves the
   * environment from its new host. True when something was running here. `knownPort`: the environment's port, for
   * its network, when nothing here records it (a move's new host whose start failed: nothing was recorded).
   */
  async leave(envId: string, knownPort?: number): Promise<boolean> {
    return this.exclusive(envId, async () => {
      const rt = this.runtime(envId);
      const file = statePath(this.dataDir, envId);
      const state = await readState(file);
      const mine = state !== null && (!state.host || state.host === hostIdentity().name);
      const webs = rt.live?.webs ?? [];
      const port = rt.served?.port ?? (mine ? state?.port : undefined) ?? knownPort;
      await Promise.all(webs.map((w) => w.stop(this.graceMs)));
      await this.settle(envId);
      const orphans = mine && !rt.live ? (state?.pids ?? [state?.pid]).filter((p): p is number => !!p && p > 0) : [];
      await Promise.all(orphans.map((pid) => killOrphan(pid, state!.releaseDir, this.graceMs, envId)));
      const strays = await killStrays(envId, [], this.graceMs);
      this.unservePort(rt);
      rt.live = null;
      if (mine) await rm(file, { force: true });
      if (port) await closeJail(this.dataDir, envId, port);
      await removeEnvironmentCgroups(envId);
      this.envs.delete(envId);
      return webs.length + orphans.length + strays > 0;
    });
  }

  /**
   * Stops an environment for good (its project cancelled): like retire, but the edge keeps answering its
   * port and domains with 503 and `text` instead of forgetting it. Nothing comes back on a worker start.
   * The route goes from the web processes straight to `text`, never through no route at all (which the edge
   * answers "no release is live").
   */
  async stop(envId: string, text = 'stopped'): Promise<void> {
    await this.retire(envId, undefined, { kind: 'unavailable', text, releaseId: null });
  }

  /** Publishes the environment's route again as this host serves it (a rejoined host's environments). */
  async republish(envId: string): Promise<void> {
    await this.exclusive(envId, async () => {
      const rt = this.runtime(envId);
      if (rt.live) await this.publish(rt);
    });
  }

  /** Maintenance on: recorded for the environment (the edge answers 503 from PostgreSQL's state); off: traffic flows again. Recorded in current.json. */
  async setMaintenance(envId: string, on: boolean, note?: string): Promise<void> {
    await this.exclusive(envId, async () => {
      const rt = this.runtime(envId);
      rt.maintenance = on ? { on, ...(note ? { note } : {}) } : { on: false };
      if (rt.live) await this.writeState(rt);
      await this.publish(rt);
    });
  }

  status(envId: string): EnvironmentStatus | null {
    const rt = this.envs.get(envId);
    if (!rt?.live || !rt.served) return null;
    const instances = rt.live.webs.map((w, i) => ({
      slot: i + 1,
      pid: w.pid,
      internalPort: w.port,
      running: w.isRunning,
      restarts: w.restarts,
    }));
    const first = instances[0];
    return {
      releaseId: rt.live.releaseId,
      port: rt.served.port,
      internalPort: first?.internalPort ?? null,
      pid: first?.pid ?? null,
      running: first?.running ?? false,
      restarts: first?.restarts ?? 0,
      instances,
    };
  }
}
