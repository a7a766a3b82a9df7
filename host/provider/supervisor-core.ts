/**
 * What every operation of the supervisor (supervisor.ts) shares: its options, the environments' runtime
 * records and their per-environment lock, the edge's publish hook, starting a web process
 * and writing the environment's state file.
 */
import path from 'node:path';
import type { Limits } from './cgroups';
import { hostIdentity } from './host-identity';
import { unforwardInstancePort } from './instance-ports';
import { CrashReports } from './supervisor-crash';
import { type StateFile, writeStateFile } from './supervisor-state';
import type { OnPhase, Runtime, SupervisorOptions, SupervisorPhase } from './supervisor-types';
import { publishedRoute, spawnWeb } from './supervisor-web';
import { delay, STOPPED_WAITING, waitReady, type Backoff, type NotReadyReason, type WebProcess } from './web-process';

/** A change that did not run: its signal aborted (task cancelled, worker stopping) while it waited its turn. */
class SupervisorStopped extends Error {
  constructor() {
    super(`not started: ${STOPPED_WAITING}`);
    this.name = 'SupervisorStopped';
  }
}

export abstract class SupervisorCore {
  protected readonly envs = new Map<string, Runtime>();
  protected readonly dataDir: string;
  protected readonly host: string;
  protected readonly graceMs: number;
  protected readonly backoff: Backoff;
  protected readonly restoreTimeoutMs: number;
  protected readonly protectEnv: SupervisorOptions['protectEnv'];
  protected readonly publishRoute: SupervisorOptions['publish'];
  protected readonly drainMs: number;
  protected readonly exposure: SupervisorOptions['exposure'];
  /** Instance ports a previous worker's instances still hold (restoreAll), until they are stopped. */
  protected readonly reserved = new Set<number>();
  /** Per environment, the instances out of the route that drain, then stop, off their change's path. */
  protected readonly leaving = new Map<string, Map<WebProcess, Promise<void>>>();
  /** Live instances that keep exiting, told to onWebCrash (supervisor-crash.ts). */
  protected readonly crashes: CrashReports;

  constructor(opts: SupervisorOptions) {
    this.dataDir = path.resolve(opts.dataDir);
    this.host = opts.listenHost ?? '127.0.0.1';
    this.graceMs = opts.stopGraceMs ?? 5000;
    this.backoff = { initialMs: 500, maxMs: 30_000, stableMs: 30_000, ...opts.restartBackoff };
    this.restoreTimeoutMs = opts.restoreHealthTimeoutMs ?? 30_000;
    this.protectEnv = opts.protectEnv;
    this.publishRoute = opts.publish;
    this.drainMs = opts.drainMs ?? 1000;
    this.exposure = opts.exposure;
    this.crashes = new CrashReports(opts.onWebCrash, this.backoff.stableMs);
  }

  /** Tells onWebCrash whether the environment's live instances keep exiting, when that changed. */
  protected reportCrash(envId: string): Promise<void> {
    return this.crashes.report(envId, this.envs.get(envId)?.live?.webs ?? []);
  }

  protected runtime(envId: string): Runtime {
    let rt = this.envs.get(envId);
    if (!rt) {
      rt = { envId, served: null, live: null, maintenance: { on: false }, lock: Promise.resolve() };
      this.envs.set(envId, rt);
    }
    return rt;
  }

  /**
   * Runs `fn` once every change of the environment queued before it has ended. With `signal`, a change whose
   * signal aborted while it waited its turn does not run (SupervisorStopped): a stopping worker does not work
   * through a queue of restarts first.
   */
  protected exclusive<T>(envId: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const rt = this.runtime(envId);
    const run = () => {
      if (signal?.aborted) throw new SupervisorStopped();
      return fn();
    };
    const next = rt.lock.then(run, run);
    rt.lock = next.catch(() => undefined);
    return next;
  }

  /** Tells the edge where the environment is served now (SupervisorOptions.publish). */
  protected async publish(rt: Runtime, o?: { wait?: boolean; say?: (line: string) => void }): Promise<void> {
    if (!this.publishRoute) return;
    await this.publishRoute(rt.envId, publishedRoute(rt), o);
  }

  /** Records that this host serves the environment on `port` (the edge listens on it). */
  protected servePort(rt: Runtime, port: number): void {
    rt.served = { port };
  }

  protected unservePort(rt: Runtime): void {
    rt.served = null;
  }

  /** Starts one instance of a release in the environment's sandbox on a port no other instance holds. */
  protected spawnWeb(
    envId: string,
    port: number,
    spec: WebSpec,
    slot: number,
    env: Record<string, string | undefined>,
    limits: Limits | undefined,
    taken: number[],
  ): Promise<WebProcess> {
    const current = this.envs.get(envId)?.live?.webs.map((w) => w.port) ?? [];
    for (const w of this.leaving.get(envId)?.keys() ?? []) current.push(w.port);
    return spawnWeb({
      dataDir: this.dataDir,
      envId,
      port,
      releaseId: spec.releaseId,
      releaseDir: spec.releaseDir,
      command: spec.command,
      env,
      limits,
      slot,
      backoff: this.backoff,
      taken: [...current, ...taken],
      exposure: this.exposure,
      reserved: [...this.reserved],
      // only the live instances count: one that exits before it is supervised fails its task instead
      onCrashChange: () => void this.reportCrash(envId),
      onPid: (web) => {
        // record the new pid so that a later worker can find an orphaned group
        const rt = this.envs.get(envId);
        if (rt?.live?.webs.includes(web)) void this.writeState(rt).catch(() => undefined);
      },
    });
  }

  /**
   * Starts the instances of `slots` and waits until every one is ready (health 2xx, or its port accepting).
   * If one is not, all of them are stopped again and the reason returned. Not yet supervised.
   */
  protected async startReady(
    envId: string,
    port: number,
    spec: WebSpec & { health?: string },
    slots: number[],
    env: Record<string, string | undefined>,
    limits: Limits | undefined,
    timeoutMs: number,
    say: (line: string) => void,
    signal?: AbortSignal,
    onPhase?: OnPhase,
  ): Promise<{ ok: true; webs: WebProcess[] } | { ok: false; message: string }> {
    const webs: WebProcess[] = [];
    try {
      for (const slot of slots) {
        const web = await this.spawnWeb(
          envId,
          port,
          spec,
          slot,
          env,
          limits,
          webs.map((w) => w.port),
        );
        webs.push(web);
        say(`Started "${spec.command}" for release ${spec.releaseId}, instance ${slot} (pid ${web.pid ?? '?'})`);
      }
    } catch (err) {
      await Promise.all(webs.map((w) => w.stop(this.graceMs)));
      throw err;
    }
    tell(onPhase, 'process_started');
    // a go-live probes every 50 ms (restoreAll keeps 100 ms)
    const ready = await Promise.all(webs.map((w) => waitReady(w, spec.health, timeoutMs, signal, 50)));
    const bad = ready.findIndex((r) => !r.ok);
    if (bad >= 0) {
      await Promise.all(webs.map((w) => w.stop(this.graceMs)));
      const r = ready[bad] as { ok: false; reason: NotReadyReason; message: string };
      if (!signal?.aborted && r.reason !== 'stopped') tellLastOutput(webs[bad], slots[bad], r.reason, say);
      return { ok: false, message: `instance ${slots[bad]} did not become ready: ${r.message}` };
    }
    tell(onPhase, 'healthy');
    for (const [i, web] of webs.entries()) {
      const r = ready[i] as { ok: true; status?: number };
      say(
        spec.health
          ? `instance ${slots[i]}: ${spec.health} answered ${r.status}`
          : `instance ${slots[i]}: port ${web.port} accepts connections`,
      );
    }
    return { ok: true, webs };
  }

  /**
   * Before `leaving` (instances out of the route) stop: `publish` has returned once every live edge serves the
   * new route; the requests the edge sent them before get `drainMs` to finish (a stop cuts what is under way).
   */
  protected async drain(_leaving: WebProcess[] = []): Promise<void> {
    if (this.publishRoute && this.drainMs > 0) await delay(this.drainMs);
  }

  /**
   * Drains `webs` (out of the route already), then stops them, without holding up the caller: its task has
   * succeeded once the edge switched. `onPhase('old_stopped')` once they are gone (also what it answers); settle()
   * waits for them.
   */
  protected stopLater(envId: string, webs: WebProcess[], onPhase?: OnPhase): Promise<void> {
    if (webs.length === 0) return Promise.resolve();
    let mine = this.leaving.get(envId);
    if (!mine) this.leaving.set(envId, (mine = new Map()));
    const all = mine;
    const done = (async () => {
      await this.drain(webs);
      await Promise.all(webs.map((w) => w.stop(this.graceMs)));
      tell(onPhase, 'old_stopped');
    })()
      .catch(() => undefined)
      .finally(() => {
        for (const w of webs) all.delete(w);
      });
    for (const w of webs) all.set(w, done);
    return done;
  }

  /**
   * Gives back the instance ports a previous worker's instances held (restoreAll, once they are stopped): their
   * forwards go, and the ports may be taken again.
   */
  protected async releaseOrphanPorts(ports: (number | null | undefined)[]): Promise<void> {
    const exposure = this.exposure;
    if (!exposure) return;
    for (const port of ports) {
      if (typeof port !== 'number') continue;
      await unforwardInstancePort(exposure.address, port).catch(() => undefined);
      await exposure.book.release(port).catch(() => undefined);
      this.reserved.delete(port);
    }
  }

  /** Every instance port this supervisor's instances hold now (live, leaving, and a previous worker's). */
  instancePortsHeld(): number[] {
    const held = new Set(this.reserved);
    for (const rt of this.envs.values()) for (const w of rt.live?.webs ?? []) held.add(w.exposed.port);
    for (const leaving of this.leaving.values()) for (const w of leaving.keys()) held.add(w.exposed.port);
    return this.exposure ? [...held] : [];
  }

  /** Waits until the environment's leaving instances (stopLater) are stopped. */
  protected async settle(envId: string): Promise<void> {
    await Promise.all([...(this.leaving.get(envId)?.values() ?? [])]);
  }

  protected async writeState(rt: Runtime): Promise<void> {
    // every change of what is live comes here: new instances start with no crash (told before the task ends)
    await this.reportCrash(rt.envId);
    const live = rt.live;
    if (!live || !rt.served) return;
    const state: StateFile = {
      version: 1,
      envId: rt.envId,
      releaseId: live.releaseId,
      releaseDir: live.releaseDir,
      port: rt.served.port,
      web: Boolean(live.manifest.web),
      since: live.since,
      maintenance: rt.maintenance,
      manifest: live.manifest,
      ...(this.protectEnv ? { envSealed: this.protectEnv.seal(JSON.stringify(live.env)) } : { env: live.env }),
      pid: live.webs[0]?.pid ?? null,
      pids: live.webs.map((w) => w.pid),
      instancePorts: live.webs.map((w) => (this.exposure ? w.exposed.port : null)),
      instances: live.instances,
      limits: live.limits,
      ...(live.taskId ? { taskId: live.taskId } : {}),
      host: hostIdentity().name,
    };
    await writeStateFile(this.dataDir, state);
  }
}

/** What an instance runs. */
interface WebSpec {
  releaseId: string;
  releaseDir: string;
  command: string;
}

/** Tells `onPhase` a phase ended; a failing listener changes nothing. */
export function tell(onPhase: OnPhase | undefined, phase: SupervisorPhase): void {
  try {
    onPhase?.(phase);
  } catch {
    // the record of a phase never changes the outcome
  }
}

/** The slots from..to, in order. */
export function slotsOf(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);
}

/**
 * What an instance that did not become ready printed last (the task log redacts it, as every line of a tenant's
 * output), and what to do: a person whose app does not start has no other place to read why when the project
 * sends its logs nowhere.
 */
/** What to do when a process was not ready, by why. */
const NOT_READY_ADVICE: Record<Exclude<NotReadyReason, 'stopped'>, string> = {
  exited: 'The app stopped before it answered: fix what it printed, then deploy again',
  health:
    'Its health check did not answer 2xx in time: make that path answer 2xx once the app is up, then deploy again',
  port: 'The app did not answer in time: it must listen on the port in $PORT, on every address (0.0.0.0), not only 127.0.0.1; fix it, then deploy again',
};

function tellLastOutput(
  web: WebProcess,
  slot: number,
  why: Exclude<NotReadyReason, 'stopped'>,
  say: (line: string) => void,
): void {
  const { stdout, stderr } = web.lastOutput();
  if (stdout.length + stderr.length === 0) say(`Instance ${slot} printed nothing before it stopped`);
  for (const [name, lines] of [
    ['output', stdout],
    ['error output', stderr],
  ] as const) {
    if (lines.length === 0) continue;
    // one entry: the header (which `say` marks) and the lines as they were printed, indented
    say(
      `Instance ${slot}'s last ${name} (${lines.length} line${lines.length === 1 ? '' : 's'}):\n${lines.map((l) => `    ${l}`).join('\n')}`,
    );
  }
  say(NOT_READY_ADVICE[why]);
}
