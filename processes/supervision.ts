/**
 * The supervision of `npm start`'s children (processes/start.ts). Each child is a spec (name, command, env,
 * readiness, how it stops); the supervisor runs it in a process group of its own, so that a terminal's
 * Ctrl-C reaches the supervisor alone and the children are stopped in order, restarts it with a short
 * backoff when it exits unexpectedly (one log line per restart), and gives up on it alone in a crash loop
 * (CRASH_LOOP.exits exits within CRASH_LOOP.windowMs), saying which and why. Its state is kept in
 * `<runDir>/processes.json` (read by GET /health) and one `<runDir>/<name>.pid` per child.
 *
 * Orphan-proof: each child runs under `setpriv --pdeathsig <its stop signal>` (util-linux), so when the
 * supervisor dies, however it dies (SIGKILL, a write to a closed output pipe, a crash), the kernel sends every
 * child its stop signal and each stops as in a clean stop: the edge stops HAProxy and Varnish, the worker its
 * tenants' processes. The kernel may send it twice (once per exiting supervisor thread): the children take every
 * signal and stop once (processes/stop-signals.ts). A child's own death is no supervisor's: the data plane and the tenants' processes it
 * started (its children, which do not inherit the signal) keep serving while it is restarted.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ProcessState, ProcessesFile } from '../system/run-state';

export interface ChildSpec {
  /** Short name: `api`, `worker`, `edge`, `temporal`, `postgres`. */
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  uid?: number;
  gid?: number;
  /** Default: no stdin, stdout and stderr shared with the supervisor. */
  stdio?: StdioOptions;
  /** Told of every process spawned for it (its first start and each restart), before its readiness. */
  spawned?: (child: ChildProcess) => void;
  /** Resolves once the process serves (called after every start); the supervisor bounds it. */
  ready?: (pid: number) => Promise<void>;
  readyTimeoutMs?: number;
  /** What the readiness check saw last (e.g. its last probe's error), said when it is not ready in time. */
  notReadyDetail?: () => string | null;
  /** Sent to the process itself to stop it (default SIGTERM); its group gets SIGKILL after stopTimeoutMs. */
  stopSignal?: NodeJS.Signals;
  stopTimeoutMs?: number;
}

const CRASH_LOOP = { exits: 5, windowMs: 60_000 };
const SETPRIV = '/usr/bin/setpriv';

/** The command line that runs `spec` with its stop signal as its parent-death signal (when setpriv is here). */
function orphanProof(spec: Pick<ChildSpec, 'command' | 'args' | 'stopSignal'>): [string, string[]] {
  if (!existsSync(SETPRIV)) return [spec.command, spec.args];
  return [SETPRIV, ['--pdeathsig', spec.stopSignal ?? 'SIGTERM', '--', spec.command, ...spec.args]];
}
const BACKOFF = { initialMs: 500, maxMs: 5_000 };

interface Entry {
  spec: ChildSpec;
  child: ChildProcess | null;
  state: ProcessState;
  exits: number[];
  timer: NodeJS.Timeout | null;
  /** Its turn to stop has come (stop()). */
  stopAsked: boolean;
  /** Ready once: until then an exit is a failed start (start() throws), not restarted. */
  started: boolean;
}

export class Supervision {
  private readonly entries = new Map<string, Entry>();
  private stopping = false;

  constructor(
    private readonly opts: {
      runDir: string;
      say: (line: string) => void;
      crashLoop?: { exits: number; windowMs: number };
      backoff?: { initialMs: number; maxMs: number };
    },
  ) {
    mkdirSync(opts.runDir, { recursive: true });
  }

  /** Starts the child and waits until it is ready; a child that exits or times out on its first start throws. */
  async start(spec: ChildSpec): Promise<void> {
    const entry: Entry = {
      spec,
      child: null,
      exits: [],
      timer: null,
      stopAsked: false,
      started: false,
      state: {
        name: spec.name,
        status: 'starting',
        pid: null,
        restarts: 0,
        last_exit: null,
        reason: null,
        since: now(),
      },
    };
    this.entries.set(spec.name, entry);
    const child = this.spawn(entry);
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code, signal) =>
        reject(new Error(`the ${spec.name} process exited (${describeExit(code, signal)}) before it was ready`)),
      ),
    );
    exited.catch(() => undefined);
    await Promise.race([this.whenReady(entry, child), exited]);
    entry.started = true;
  }

  pid(name: string): number | null {
    return this.entries.get(name)?.state.pid ?? null;
  }

  states(): ProcessState[] {
    return [...this.entries.values()].map((e) => ({ ...e.state }));
  }

  /** Stops the named children one after the other (a line each); none of them is restarted any more. */
  async stop(names: string[]): Promise<void> {
    this.stopping = true;
    for (const name of names) {
      const entry = this.entries.get(name);
      if (!entry) continue;
      if (entry.timer) clearTimeout(entry.timer);
      entry.timer = null;
      entry.stopAsked = true;
      const started = Date.now();
      const child = entry.child;
      if (child && child.exitCode === null && child.signalCode === null) {
        const gone = new Promise<void>((r) => child.once('exit', () => r()));
        signal(child.pid, entry.spec.stopSignal ?? 'SIGTERM', false);
        const timer = setTimeout(() => signal(child.pid, 'SIGKILL', true), entry.spec.stopTimeoutMs ?? 15_000);
        await gone;
        clearTimeout(timer);
      }
      // whatever the process left in its group (a build step, a helper) goes with it
      if (child?.pid) signal(child.pid, 'SIGKILL', true);
      entry.state = { ...entry.state, status: 'stopped', pid: null, since: now() };
      this.save();
      this.opts.say(`Stopped the ${name} process (${((Date.now() - started) / 1000).toFixed(1)} s).`);
    }
  }

  /** Removes processes.json and the pid files (after a stop). */
  clear(): void {
    for (const name of this.entries.keys()) rmSync(join(this.opts.runDir, `${name}.pid`), { force: true });
    rmSync(join(this.opts.runDir, 'processes.json'), { force: true });
  }

  private spawn(entry: Entry): ChildProcess {
    const { spec } = entry;
    const [command, args] = orphanProof(spec);
    const child = spawn(command, args, {
      cwd: spec.cwd,
      env: spec.env,
      stdio: spec.stdio ?? ['ignore', 'inherit', 'inherit'],
      // its own process group: a terminal's SIGINT reaches the supervisor only, which stops the children in order
      detached: true,
      ...(spec.uid !== undefined ? { uid: spec.uid, gid: spec.gid } : {}),
    });
    entry.child = child;
    spec.spawned?.(child);
    entry.state = { ...entry.state, status: 'starting', pid: child.pid ?? null, since: now() };
    child.on('error', (err) => this.opts.say(`The ${spec.name} process could not start: ${err.message}`));
    child.once('exit', (code, sig) => this.exited(entry, child, code, sig));
    this.save();
    return child;
  }

  private async whenReady(entry: Entry, child: ChildProcess): Promise<void> {
    const { spec } = entry;
    if (spec.ready && child.pid) {
      const timeoutMs = spec.readyTimeoutMs ?? 120_000;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        spec.ready(child.pid),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            const detail = spec.notReadyDetail?.();
            reject(
              new Error(
                `the ${spec.name} process was not ready within ${timeoutMs / 1000} s${detail ? ` (${detail})` : ''}`,
              ),
            );
          }, timeoutMs);
        }),
      ]).finally(() => clearTimeout(timer));
    }
    if (entry.child === child && child.exitCode === null && child.signalCode === null) {
      entry.state = { ...entry.state, status: 'running', since: now() };
      this.save();
    }
  }

  private exited(entry: Entry, child: ChildProcess, code: number | null, sig: NodeJS.Signals | null): void {
    if (entry.child !== child) return;
    const how = describeExit(code, sig);
    entry.state = { ...entry.state, pid: null, last_exit: how };
    if (this.stopping && !entry.stopAsked)
      // the stop order was not kept: something else signalled it (a terminal's Ctrl-C reaching the group)
      this.opts.say(`The ${entry.spec.name} process exited (${how}) before its turn to stop.`);
    if (this.stopping || entry.state.status === 'stopped') return this.save();
    if (!entry.started) {
      entry.state = { ...entry.state, status: 'failed', reason: `exited (${how}) before it was ready`, since: now() };
      return this.save();
    }
    // its group may hold what it started (a port's listener, a helper): gone before the next start
    if (child.pid) signal(child.pid, 'SIGKILL', true);
    const loop = this.opts.crashLoop ?? CRASH_LOOP;
    const t = Date.now();
    entry.exits = [...entry.exits.filter((at) => t - at < loop.windowMs), t];
    if (entry.exits.length >= loop.exits) {
      const reason = `exited ${entry.exits.length} times within ${loop.windowMs / 1000} s (last: ${how}); not restarted`;
      entry.state = { ...entry.state, status: 'failed', reason, since: now() };
      this.save();
      this.opts.say(`Giving up on the ${entry.spec.name} process: it ${reason}. The other processes keep running.`);
      return;
    }
    const backoff = this.opts.backoff ?? BACKOFF;
    const wait = Math.min(backoff.maxMs, backoff.initialMs * 2 ** (entry.exits.length - 1));
    entry.state = { ...entry.state, status: 'restarting', restarts: entry.state.restarts + 1, since: now() };
    this.save();
    this.opts.say(
      `The ${entry.spec.name} process exited unexpectedly (${how}); restarting it in ${(wait / 1000).toFixed(1)} s (restart ${entry.state.restarts}).`,
    );
    entry.timer = setTimeout(() => {
      entry.timer = null;
      if (this.stopping) return;
      const next = this.spawn(entry);
      this.whenReady(entry, next).catch((err) => {
        // not ready in time: it counts as an exit (the kill brings the next restart or the end of the line)
        this.opts.say(`The restarted ${entry.spec.name} process is not serving: ${(err as Error).message}`);
        if (entry.child === next && next.pid) signal(next.pid, 'SIGKILL', true);
      });
    }, wait);
  }

  private save(): void {
    const file: ProcessesFile = { supervisor_pid: process.pid, processes: this.states() };
    const path = join(this.opts.runDir, 'processes.json');
    const tmp = `${path}.${process.pid}.tmp`;
    try {
      writeFileSync(tmp, `${JSON.stringify(file, null, 2)}\n`);
      renameSync(tmp, path);
      for (const e of this.entries.values()) {
        const pidFile = join(this.opts.runDir, `${e.spec.name}.pid`);
        if (e.state.pid) writeFileSync(pidFile, `${e.state.pid}\n`);
        else rmSync(pidFile, { force: true });
      }
    } catch {
      // the state files are for operators and /health; supervision goes on without them
    }
  }
}

function now(): string {
  return new Date().toISOString();
}

function describeExit(code: number | null, sig: NodeJS.Signals | null): string {
  return sig ? `killed by ${sig}` : `exit code ${code}`;
}

/** A signal to the process (or its whole group); gone already is fine. */
function signal(pid: number | undefined, sig: NodeJS.Signals, group: boolean): void {
  if (!pid) return;
  try {
    process.kill(group ? -pid : pid, sig);
  } catch {
    // gone already
  }
}
