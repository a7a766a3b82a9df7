/**
 * The supervisor's changes of a live release's instances (supervisor.ts): restarts with new variables or a
 * new plan, one instance at a time, each ready before it takes its predecessor's place in the route; and
 * scaling to N instances (new ones ready before they join the route, extra ones drained before they stop).
 */
import type { Limits } from './cgroups';
import type { OnLine } from './run-step';
import { slotsOf, SupervisorCore, tell } from './supervisor-core';
import type {
  GoLiveResult,
  Live,
  OnPhase,
  RestartOptions,
  RestartResult,
  Runtime,
  ScaleResult,
} from './supervisor-types';
import { safe } from './supervisor-web';
import { STOPPED_WAITING } from './web-process';

export abstract class SupervisorInstances extends SupervisorCore {
  /**
   * Restarts the live release's web instances with a new environment, without a build, one at a time: each
   * new one ready (health 2xx, or the port accepting) before it replaces the old one; on failure the running
   * instances keep serving.
   */
  restartWithEnv(o: RestartOptions): Promise<GoLiveResult> {
    return this.exclusive(
      o.envId,
      async () => {
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
        const r = await this.rolling(rt, live, o.env, live.limits, o.healthTimeoutMs, o.onLine, o.signal, o.onPhase);
        if (!r.ok) return r;
        say(`Release ${live.releaseId} serves with the current variables`);
        return { ok: true, alreadyLive: false, internalPort: rt.live?.webs[0]?.port ?? null };
      },
      o.signal,
    );
  }

  /**
   * Restarts the live release's web instances (reboot, resize: with `limits`, the new plan) one at a time:
   * each new instance must be ready (health) before it takes its predecessor's place in the route and the
   * predecessor stops; if it is not, it is stopped and the old one keeps serving. With `env`, that is merged
   * into the processes' environment (data put back, a new database service). Nothing live: `restarted: false`.
   */
  restartWeb(
    envId: string,
    o: {
      limits?: Limits;
      env?: Record<string, string>;
      healthTimeoutMs: number;
      onLine?: OnLine;
      /** As RestartOptions.signal (reboot, resize); the restarts inside a longer task pass none. */
      signal?: AbortSignal;
      onPhase?: OnPhase;
    },
  ): Promise<RestartResult> {
    return this.exclusive(
      envId,
      async () => {
        const rt = this.runtime(envId);
        const live = rt.live;
        if (!live) return { ok: true, restarted: false };
        const limits = o.limits ?? live.limits;
        if (!live.manifest.web) {
          live.limits = limits;
          await this.writeState(rt);
          return { ok: true, restarted: false };
        }
        if (!rt.served) return { ok: true, restarted: false };
        const env = { ...live.env, ...(o.env ?? {}) };
        const r = await this.rolling(rt, live, env, limits, o.healthTimeoutMs, o.onLine, o.signal, o.onPhase);
        return r.ok ? { ok: true, restarted: true } : r;
      },
      o.signal,
    );
  }

  /**
   * Stops the live release's web instances (the edge answers "no web process") until `restartWeb` starts them
   * again: a storage move copies the data while nothing writes it. False when nothing was running.
   */
  stopWeb(envId: string): Promise<boolean> {
    return this.exclusive(envId, async () => {
      const rt = this.runtime(envId);
      const webs = rt.live?.webs ?? [];
      if (!rt.live || webs.length === 0) return false;
      rt.live = { ...rt.live, webs: [] };
      await this.publish(rt);
      await Promise.all(webs.map((w) => w.stop(this.graceMs)));
      return true;
    });
  }

  /** Replaces every instance in turn (see restartWeb); the environment and limits are kept once all are. */
  private async rolling(
    rt: Runtime,
    live: Live,
    env: Record<string, string | undefined>,
    limits: Limits | undefined,
    timeoutMs: number,
    onLine?: OnLine,
    signal?: AbortSignal,
    onPhase?: OnPhase,
  ): Promise<{ ok: true; instances: number } | { ok: false; message: string }> {
    const say = (line: string) => safe(onLine, `==> ${line}`);
    const port = rt.served?.port ?? 0;
    const spec = {
      releaseId: live.releaseId,
      releaseDir: live.releaseDir,
      command: live.manifest.web!,
      health: live.manifest.health,
    };
    const total = live.webs.length;
    if (total === 0) {
      // Stopped (stopWeb: a storage move): the environment's instances start again, all ready before they serve.
      const started = await this.startReady(
        rt.envId,
        port,
        spec,
        slotsOf(1, live.instances),
        env,
        limits,
        timeoutMs,
        say,
        signal,
        onPhase,
      );
      if (!started.ok) {
        safe(onLine, started.message, 'stderr');
        return { ok: false, message: started.message };
      }
      rt.live = { ...live, webs: started.webs, env, limits };
      for (const web of started.webs) web.supervise();
      await this.writeState(rt);
      await this.publish(rt);
      tell(onPhase, 'edge_switched');
      return { ok: true, instances: started.webs.length };
    }
    // the old instances, each drained and stopped off the task's path: old_stopped once the last one is gone
    const leaving: Promise<void>[] = [];
    for (let i = 0; i < total; i++) {
      if (signal?.aborted)
        return {
          ok: false,
          message: `${STOPPED_WAITING}; ${i} of ${total} instances were replaced, the rest keep serving`,
        };
      const started = await this.startReady(
        rt.envId,
        port,
        spec,
        [i + 1],
        env,
        limits,
        timeoutMs,
        say,
        signal,
        onPhase,
      );
      if (!started.ok) {
        const message = `${started.message}; the old one keeps serving${i > 0 ? ` (${i} of ${total} instances were replaced)` : ''}`;
        safe(onLine, message, 'stderr');
        return { ok: false, message };
      }
      const [web] = started.webs;
      const current = rt.live ?? live;
      const old = current.webs[i];
      const webs = current.webs.slice();
      webs[i] = web;
      rt.live = { ...current, webs, ...(i === total - 1 ? { env, limits } : {}) };
      web.supervise();
      await this.writeState(rt);
      await this.publish(rt);
      tell(onPhase, 'edge_switched');
      say(
        `Instance ${i + 1} of ${total} serves from pid ${web.pid ?? '?'}; stopping the old one (pid ${old?.pid ?? '?'})`,
      );
      // drained and stopped off the task's path; the next instance starts meanwhile
      leaving.push(this.stopLater(rt.envId, old ? [old] : []));
    }
    void Promise.all(leaving).then(() => tell(onPhase, 'old_stopped'));
    return { ok: true, instances: total };
  }

  /**
   * Runs `instances` web instances of the live release: new ones start and must be ready before they join
   * the route; extra ones leave the route, are drained, then stopped. Nothing live: nothing to change
   * (`changed: false`; the next release starts as many as its caller asks).
   */
  scale(
    envId: string,
    o: { instances: number; healthTimeoutMs: number; onLine?: OnLine; signal?: AbortSignal; onPhase?: OnPhase },
  ): Promise<ScaleResult> {
    return this.exclusive(
      envId,
      async () => {
        const say = (line: string) => safe(o.onLine, `==> ${line}`);
        const rt = this.runtime(envId);
        const live = rt.live;
        const want = Math.max(1, o.instances);
        if (!live) return { ok: true, instances: want, changed: false };
        if (!live.manifest.web || !rt.served) {
          rt.live = { ...live, instances: want };
          await this.writeState(rt);
          return { ok: true, instances: want, changed: false };
        }
        const have = live.webs.length;
        if (want > have) {
          const spec = {
            releaseId: live.releaseId,
            releaseDir: live.releaseDir,
            command: live.manifest.web,
            health: live.manifest.health,
          };
          const started = await this.startReady(
            envId,
            rt.served.port,
            spec,
            slotsOf(have + 1, want),
            live.env,
            live.limits,
            o.healthTimeoutMs,
            say,
            o.signal,
            o.onPhase,
          );
          if (!started.ok) {
            safe(o.onLine, `${started.message}; the environment stays at ${have}`, 'stderr');
            return { ok: false, message: `${started.message}; the environment stays at ${have}` };
          }
          rt.live = { ...live, webs: [...live.webs, ...started.webs], instances: want };
          for (const web of started.webs) web.supervise();
          await this.writeState(rt);
          await this.publish(rt);
          tell(o.onPhase, 'edge_switched');
          say(`${want} instances serve release ${live.releaseId}`);
        } else if (want < have) {
          const extra = live.webs.slice(want);
          rt.live = { ...live, webs: live.webs.slice(0, want), instances: want };
          await this.writeState(rt);
          await this.publish(rt);
          tell(o.onPhase, 'edge_switched');
          say(`Instances ${want + 1} to ${have} left the route; stopping them`);
          this.stopLater(envId, extra, o.onPhase);
          say(`${want} instance${want === 1 ? '' : 's'} serve${want === 1 ? 's' : ''} release ${live.releaseId}`);
        } else {
          rt.live = { ...live, instances: want };
          await this.writeState(rt);
        }
        return { ok: true, instances: want, changed: want !== have };
      },
      o.signal,
    );
  }
}
