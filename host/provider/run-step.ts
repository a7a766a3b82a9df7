/**
 * Runs one shell step (a build or deploy command) in its own process group, streaming its output line by
 * line as it is printed. On timeout or abort the whole group (the shell and everything it started) is sent
 * SIGTERM, then SIGKILL after a short grace. When the shell exits normally, anything it left running in its
 * group is killed as well: a step must not leave processes behind that nothing supervises.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import { launch, type Jail } from './sandbox';

type OutputStream = 'stdout' | 'stderr';
export type OnLine = (stream: OutputStream, line: string) => void;

interface RunStepOptions {
  command: string;
  cwd: string;
  /** The complete environment of the step (the caller merges). Its values are never printed. */
  env: Record<string, string | undefined>;
  timeoutMs: number;
  signal?: AbortSignal;
  onLine: OnLine;
  /** Time between SIGTERM and SIGKILL when the group is stopped (default 2000 ms). */
  killGraceMs?: number;
  /** The environment's sandbox (sandbox.ts); without it the step runs as the worker (tests of this module). */
  jail?: Jail;
  /** Called right after spawn with the shell's pid (e.g. to hold it to its plan: cgroups.ts). */
  onSpawn?: (pid: number) => void;
}

export interface RunStepResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  cancelled: boolean;
}

const DEFAULT_GRACE_MS = 2000;
/** How long to wait for output pipes to close after the shell exited and its group was killed. */
const DRAIN_MS = 1000;

export function runStep(opts: RunStepOptions): Promise<RunStepResult> {
  const { command, cwd, env, timeoutMs, signal, onLine } = opts;
  const graceMs = opts.killGraceMs ?? DEFAULT_GRACE_MS;

  if (signal?.aborted) {
    return Promise.resolve({ exitCode: null, signal: null, timedOut: false, cancelled: true });
  }

  return new Promise<RunStepResult>((resolve, reject) => {
    const how = opts.jail
      ? launch(opts.jail, command, { cwd, env })
      : { file: '/bin/sh', args: ['-c', command], cwd, env };
    const child = spawn(how.file, how.args, {
      cwd: how.cwd,
      env: how.env as NodeJS.ProcessEnv,
      ...('uid' in how && how.uid !== undefined ? { uid: how.uid, gid: how.gid } : {}),
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const pgid = child.pid;
    if (pgid !== undefined && opts.onSpawn) {
      try {
        opts.onSpawn(pgid);
      } catch (err) {
        killGroup(pgid, 'SIGKILL'); // a step that cannot be held to its plan does not run
        throw err;
      }
    }
    let timedOut = false;
    let cancelled = false;
    let exited: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];

    const stopGroup = () => {
      if (pgid === undefined) return;
      killGroup(pgid, 'SIGTERM');
      const t = setTimeout(() => killGroup(pgid, 'SIGKILL'), graceMs);
      t.unref();
      timers.push(t);
    };

    const timer = setTimeout(() => {
      if (exited) return;
      timedOut = true;
      stopGroup();
    }, timeoutMs);
    timers.push(timer);

    const onAbort = () => {
      if (exited || timedOut) return;
      cancelled = true;
      stopGroup();
    };
    signal?.addEventListener('abort', onAbort, { once: true });

    let open = 2;
    const streamDone = () => {
      open -= 1;
      maybeFinish();
    };
    pipeLines(child.stdout!, 'stdout', onLine, streamDone);
    pipeLines(child.stderr!, 'stderr', onLine, streamDone);

    const finish = () => {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      signal?.removeEventListener('abort', onAbort);
      resolve({
        exitCode: exited?.code ?? null,
        signal: exited?.signal ?? null,
        timedOut,
        cancelled,
      });
    };
    // Resolves once the shell has exited, both pipes are closed and its group is gone (what it left behind
    // got SIGKILL at its exit; under load that takes a moment to land).
    let finishing = false;
    const maybeFinish = () => {
      if (!exited || open > 0 || finishing) return;
      finishing = true;
      if (pgid === undefined) return finish();
      void waitForGroup(pgid, graceMs).then(() => {
        killGroup(pgid, 'SIGKILL');
        finish();
      });
    };

    child.on('error', (err) => {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      signal?.removeEventListener('abort', onAbort);
      reject(err);
    });

    child.on('exit', (code, sig) => {
      exited = { code, signal: sig };
      // Whatever the shell left behind in its group goes with it (a stopped group gets its grace first).
      if (pgid !== undefined && !(timedOut || cancelled)) killGroup(pgid, 'SIGKILL');
      maybeFinish();
      // A process that escaped the group (setsid) may still hold the pipes: stop waiting for them.
      const drain = setTimeout(
        () => {
          child.stdout?.destroy();
          child.stderr?.destroy();
          if (open > 0) {
            open = 0;
            maybeFinish();
          }
        },
        DRAIN_MS + (timedOut || cancelled ? graceMs : 0),
      );
      drain.unref();
      timers.push(drain);
    });
  });
}

async function waitForGroup(pgid: number, maxMs: number): Promise<void> {
  const until = Date.now() + maxMs;
  while (groupAlive(pgid) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Sends `sig` to every process of group `pgid`; a group that is already gone is not an error. */
export function killGroup(pgid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, sig);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ESRCH') return false;
    if (code === 'EPERM') return false;
    throw err;
  }
}

/**
 * Whether any process of group `pgid` is still running. Zombies do not count: where PID 1 is slow to reap
 * orphans, a killed process lingers as a zombie that `kill(-pgid, 0)` would still report. Uses /proc on
 * Linux, `kill(-pgid, 0)` elsewhere.
 */
export function groupAlive(pgid: number): boolean {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return signalZero(-pgid);
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(Number(entry));
    if (stat && stat.pgrp === pgid && stat.state !== 'Z' && stat.state !== 'X') return true;
  }
  return false;
}

/** Whether process `pid` is running (a zombie is not). */
export function processAlive(pid: number): boolean {
  if (!signalZero(pid)) return false;
  const stat = procStat(pid);
  return stat ? stat.state !== 'Z' && stat.state !== 'X' : true;
}

function signalZero(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function procStat(pid: number): { state: string; pgrp: number } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid pgrp ...": comm may contain spaces and parentheses.
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: rest[0], pgrp: Number(rest[2]) };
  } catch {
    return null;
  }
}

/**
 * The longest line a step's output keeps (characters): a longer one is cut while it is read, its first
 * MAX_LINE characters passed on at once with "…", the rest of it dropped up to its newline. So no buffer of
 * a step's output holds more than one cut line and one chunk of the pipe, however long a line it prints
 * (the task log keeps lines of the same length, activities/toolkit/task-log.ts).
 */
export const MAX_LINE = 8192;

/**
 * Splits a stream on \n (a trailing \r is dropped) and calls onLine per line; the partial last line is
 * flushed at the end. Lines are cut at MAX_LINE as they are read, before any chunks are joined.
 */
export function pipeLines(stream: Readable, name: OutputStream, onLine: OnLine, done: () => void): void {
  const decoder = new StringDecoder('utf8');
  let partial = '';
  /** Inside a line that was cut already: what comes up to its newline is dropped. */
  let cut = false;
  let ended = false;
  const emit = (line: string) => {
    try {
      onLine(name, line.endsWith('\r') ? line.slice(0, -1) : line);
    } catch {
      // A failing log sink must not break the step.
    }
  };
  const take = (text: string) => {
    let at = 0;
    while (at < text.length) {
      const nl = text.indexOf('\n', at);
      const end = nl < 0 ? text.length : nl;
      if (cut) {
        // the rest of a cut line: skipped without being kept
      } else if (partial.length + (end - at) > MAX_LINE) {
        emit(`${partial}${text.slice(at, at + MAX_LINE - partial.length)}…`);
        partial = '';
        cut = true;
      } else if (nl < 0) {
        partial += text.slice(at);
      } else {
        emit(partial + text.slice(at, nl));
        partial = '';
      }
      if (nl < 0) return;
      cut = false;
      at = nl + 1;
    }
  };
  stream.on('data', (chunk: Buffer) => take(decoder.write(chunk)));
  const end = () => {
    if (ended) return;
    ended = true;
    take(decoder.end());
    const rest = partial;
    partial = '';
    if (rest.length > 0) emit(rest);
    done();
  };
  stream.on('end', end);
  stream.on('close', end);
  stream.on('error', end);
}
