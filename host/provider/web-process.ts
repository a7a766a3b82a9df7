/**
 * One release's `web` process: `/bin/sh -c <web>` in the environment's sandbox (sandbox.ts) and its own
 * process group, PORT set, output appended to the environment's web.log. The supervisor's probes reach it at the
 * sandbox's address (its veth address when it has its own network namespace); the edge at `exposed`, its
 * host's HOST_ADDRESS and instance port (instance-ports.ts). Once `supervise()`d, an unexpected exit is followed by a restart on the same
 * port after a backoff (doubling, capped; reset after a stable run). `stop()` takes the whole group down.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, fstatSync, openSync, readSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { groupAlive, killGroup } from './run-step';
import { launch, type Jail } from './sandbox';

export interface Backoff {
  initialMs: number;
  maxMs: number;
  /** A run at least this long resets the backoff. */
  stableMs: number;
}

interface WebProcessOptions {
  label: string;
  command: string;
  cwd: string;
  env: Record<string, string | undefined>;
  jail: Jail;
  port: number;
  logPath: string;
  /** Where stderr goes (the console's alone, 0600), tailed and shipped by logs/error-tail.ts; default logPath. */
  errorLogPath?: string;
  backoff: Backoff;
  /** Called after every (re)start with the new pid. */
  onStart?: (pid: number) => void;
  /** Where the edge reaches it (HOST_ADDRESS and its instance port); default its own address and port. */
  exposed?: { host: string; port: number };
  /** Called once it has stopped for good (stop()): its instance port is given back. */
  onStopped?: () => Promise<void>;
  /** Called when `crash` changes: a supervised exit, or a restart that stayed up `backoff.stableMs`. */
  onCrashChange?: () => void;
}

/** A supervised process that keeps exiting: since its first exit of the run, the last one, and how many. */
interface Crash {
  since: Date;
  code: number | null;
  signal: string | null;
  exits: number;
  lastAt: Date;
}

export class WebProcess {
  readonly port: number;
  /** Where the proxy and the health probes reach it. */
  readonly host: string;
  /** Where the edge reaches it: HOST_ADDRESS and its instance port (docs/hosts.md), else host and port. */
  readonly exposed: { host: string; port: number };
  readonly agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  restarts = 0;
  lastExit: { code: number | null; signal: string | null } | null = null;
  /** Set at a supervised exit; null again once a restart has stayed up `backoff.stableMs`. */
  crash: Crash | null = null;
  private steadyTimer: NodeJS.Timeout | null = null;
  private child: ChildProcess | null = null;
  private running = false;
  private supervised = false;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  private failures = 0;
  private startedAt = 0;
  /** Where its last start's output begins in web.log and in the error log (their sizes then). */
  private outputFrom = { log: 0, err: 0 };

  constructor(private readonly opts: WebProcessOptions) {
    this.port = opts.port;
    this.host = opts.jail.address;
    this.exposed = opts.exposed ?? { host: this.host, port: this.port };
  }

  get pid(): number | null {
    return this.running ? (this.child?.pid ?? null) : null;
  }

  get isRunning(): boolean {
    return this.running;
  }

  start(): void {
    if (this.stopped || this.running) return;
    this.note(`starting "${this.opts.command}" on internal port ${this.port}`);
    const fd = openSync(this.opts.logPath, 'a');
    const errFd = this.opts.errorLogPath ? openSync(this.opts.errorLogPath, 'a', 0o600) : fd;
    this.outputFrom = { log: fstatSync(fd).size, err: errFd === fd ? -1 : fstatSync(errFd).size };
    let child: ChildProcess;
    try {
      const how = launch(this.opts.jail, this.opts.command, {
        cwd: this.opts.cwd,
        env: { ...this.opts.env, PORT: String(this.port) },
        outliveParent: true,
      });
      child = spawn(how.file, how.args, {
        cwd: how.cwd,
        env: how.env as NodeJS.ProcessEnv,
        ...(how.uid !== undefined ? { uid: how.uid, gid: how.gid } : {}),
        detached: true,
        stdio: ['ignore', fd, errFd],
      });
    } finally {
      closeSync(fd);
      if (errFd !== fd) closeSync(errFd);
    }
    this.child = child;
    this.running = true;
    this.startedAt = Date.now();
    child.on('error', (err) => {
      this.note(`could not start: ${err.message}`);
      this.exited(child, null, null);
    });
    child.on('exit', (code, signal) => this.exited(child, code, signal));
    if (child.pid) this.opts.onStart?.(child.pid);
    // a restart after exits: steady again once it has stayed up as long as the backoff counts a run as stable
    if (this.crash) {
      this.steadyTimer = setTimeout(() => {
        this.steadyTimer = null;
        if (this.child !== child || !this.running || this.stopped) return;
        this.crash = null;
        this.opts.onCrashChange?.();
      }, this.opts.backoff.stableMs);
      this.steadyTimer.unref();
    }
  }

  /** From now on an exit is restarted. */
  supervise(): void {
    this.supervised = true;
    if (!this.running && !this.stopped) this.scheduleRestart();
  }

  /** SIGTERM to the group, SIGKILL after graceMs; resolves when the group is gone. */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.steadyTimer) clearTimeout(this.steadyTimer);
    this.steadyTimer = null;
    const pgid = this.child?.pid;
    if (pgid !== undefined && (this.running || groupAlive(pgid))) {
      killGroup(pgid, 'SIGTERM');
      const deadline = Date.now() + graceMs;
      while ((this.running || groupAlive(pgid)) && Date.now() < deadline) await delay(25);
      killGroup(pgid, 'SIGKILL');
      const hard = Date.now() + 2000;
      while ((this.running || groupAlive(pgid)) && Date.now() < hard) await delay(25);
    }
    this.agent.destroy();
    const stopped = this.opts.onStopped;
    this.opts.onStopped = undefined;
    await stopped?.().catch((err) => this.note(`its instance port was not given back: ${(err as Error).message}`));
  }

  /**
   * The last lines it printed since its last start (stdout's, then stderr's; at most `maxLines` of each, from the
   * last 8 KiB of each, each line cut at 300 characters), without the supervisor's own notes. For a start that
   * failed: what the app said before it exited or while it did not answer. Not redacted: the caller does that.
   */
  lastOutput(maxLines = 20): { stdout: string[]; stderr: string[] } {
    const read = (file: string | undefined, from: number): string[] => {
      if (!file || from < 0) return [];
      let fd: number | undefined;
      try {
        fd = openSync(file, 'r');
        const size = fstatSync(fd).size;
        const start = Math.max(from, size - 8192);
        const buf = Buffer.alloc(Math.max(0, size - start));
        const n = buf.length ? readSync(fd, buf, 0, buf.length, start) : 0;
        const lines = buf.subarray(0, n).toString('utf8').split('\n');
        if (start > from) lines.shift(); // a line cut by the 8 KiB window
        return lines
          .filter((l) => l.trim() !== '' && !SUPERVISOR_NOTE.test(l))
          .slice(-maxLines)
          .map((l) => (l.length > 300 ? `${l.slice(0, 300)}…` : l));
      } catch {
        return [];
      } finally {
        if (fd !== undefined) closeSync(fd);
      }
    };
    return {
      stdout: read(this.opts.logPath, this.outputFrom.log),
      stderr: read(this.opts.errorLogPath, this.outputFrom.err),
    };
  }

  private exited(child: ChildProcess, code: number | null, signal: string | null): void {
    if (child !== this.child || !this.running) return;
    this.running = false;
    this.lastExit = { code, signal };
    // Whatever the shell left in its group (a server it forked) must not hold the port for the next start.
    if (child.pid) killGroup(child.pid, 'SIGKILL');
    if (this.stopped) {
      this.note(`stopped`);
      return;
    }
    this.note(`exited ${code !== null ? `with code ${code}` : `on ${signal}`}`);
    if (!this.supervised) return;
    if (this.steadyTimer) clearTimeout(this.steadyTimer);
    this.steadyTimer = null;
    const now = new Date();
    this.crash = { since: this.crash?.since ?? now, code, signal, exits: (this.crash?.exits ?? 0) + 1, lastAt: now };
    this.opts.onCrashChange?.();
    this.scheduleRestart();
  }

  private scheduleRestart(): void {
    if (this.timer || this.stopped) return;
    if (Date.now() - this.startedAt >= this.opts.backoff.stableMs) this.failures = 0;
    const wait = Math.min(this.opts.backoff.maxMs, this.opts.backoff.initialMs * 2 ** this.failures);
    this.failures += 1;
    this.note(`restarting in ${wait} ms`);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.stopped) return;
      this.restarts += 1;
      this.start();
    }, wait);
  }

  /** A line of the supervisor's own in the app's log (SUPERVISOR_NOTE matches it). */
  private note(text: string): void {
    try {
      appendFileSync(this.opts.logPath, `[${new Date().toISOString()}] ${this.opts.label}: ${text}\n`);
    } catch {
      // the log is best effort
    }
  }
}

/**
 * A line `note()` writes, with the label supervisor-web.ts gives: "[2026-12-04T03:30:32.489Z] release <id> (instance 2): stopped".
 * lastOutput() leaves these out of what the app printed.
 */
const SUPERVISOR_NOTE = /^\[\d{4}-\d\d-\d\dT[\d:.]+Z\] release \S+( \(instance \d+\))?: /;

export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A port that was free on 127.0.0.1 a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** One health probe: the status of GET path (or 'connected' for a bare TCP check), or an error text. */
function probe(
  host: string,
  port: number,
  pathname: string | undefined,
  timeoutMs: number,
): Promise<number | 'connected' | string> {
  return new Promise((resolve) => {
    if (!pathname) {
      const s = net.connect(port, host);
      const t = setTimeout(() => {
        s.destroy();
        resolve('connection timed out');
      }, timeoutMs);
      s.once('connect', () => {
        clearTimeout(t);
        s.destroy();
        resolve('connected');
      });
      s.once('error', (err) => {
        clearTimeout(t);
        resolve(err.message);
      });
      return;
    }
    const req = http.get({ host, port, path: pathname, agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error('no answer in time')));
    req.on('error', (err) => resolve(err.message));
  });
}

/** Why a wait for readiness ended early: its task was cancelled, or the worker running it is stopping. */
export const STOPPED_WAITING = 'the task was cancelled or its worker is stopping';

/**
 * Why a process was not ready: it `exited`, its `health` path never answered 2xx, its `port` never accepted a
 * connection, or the wait was `stopped` (cancelled task, stopping worker). The supervisor picks its advice from it.
 */
export type NotReadyReason = 'exited' | 'health' | 'port' | 'stopped';

/**
 * Waits until the process answers: `health` with 2xx, or (no health) until the port accepts connections.
 * Fails early when the process exits, or once `signal` aborts. Probes every `intervalMs` (a go-live: 50 ms).
 */
export async function waitReady(
  proc: WebProcess,
  health: string | undefined,
  timeoutMs: number,
  signal?: AbortSignal,
  intervalMs = 100,
): Promise<{ ok: true; status: number | null } | { ok: false; reason: NotReadyReason; message: string }> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  for (;;) {
    if (signal?.aborted)
      return { ok: false, reason: 'stopped', message: `stopped waiting (last: ${last}): ${STOPPED_WAITING}` };
    if (!proc.isRunning) {
      const e = proc.lastExit;
      return {
        ok: false,
        reason: 'exited',
        message: `web process exited ${e?.code !== null && e?.code !== undefined ? `with code ${e.code}` : `on ${e?.signal ?? 'an error'}`} before it was ready`,
      };
    }
    const left = deadline - Date.now();
    if (left <= 0) break;
    const r = await probe(proc.host, proc.port, health, Math.min(2000, Math.max(left, 50)));
    if (r === 'connected') return { ok: true, status: null };
    if (typeof r === 'number' && r >= 200 && r < 300) return { ok: true, status: r };
    last = typeof r === 'number' ? `status ${r}` : r;
    if (Date.now() >= deadline) break;
    await delay(intervalMs);
  }
  const what = health ? `health check ${health} did not answer 2xx` : `port ${proc.port} did not accept connections`;
  return { ok: false, reason: health ? 'health' : 'port', message: `${what} within ${timeoutMs} ms (last: ${last})` };
}
