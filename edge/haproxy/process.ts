/**
 * The HAProxy master (master-worker mode, `-W -S <master socket>`), started by the control plane as a child
 * in a session of its own: a SIGKILL of the control plane (or of `npm start`'s process group of the edge)
 * leaves it serving, and the next control plane ADOPTS it (pidfile + master socket) instead of starting a
 * second one (SO_REUSEPORT would let both serve). A reload is SIGUSR2 to the master: the new worker takes
 * the listeners over (`expose-fd listeners`), the old one finishes its requests.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { command } from './runtime';
import { started } from '../../host/child-output';
import type { HaproxyPaths } from './paths';

const run = promisify(execFile);
export const HAPROXY_BIN = process.env.HAPROXY_BIN || '/usr/sbin/haproxy';
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

class HaproxyMissingError extends Error {
  constructor() {
    super(`HAProxy (${HAPROXY_BIN}) is not installed: the edge's data plane needs it (apt-get install -y haproxy)`);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // a zombie (exited, not reaped yet) is not running
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

export class HaproxyProcess {
  private child: ChildProcess | null = null;
  pid: number | null = null;
  /** Reloads this object made (its master's own count: masterReloads). */
  reloads = 0;

  /** `more`: configuration files read after haproxy.cfg (the password's key: edge/basic-auth/). */
  constructor(
    private readonly paths: HaproxyPaths,
    private readonly more: string[] = [],
  ) {}

  private get files(): string[] {
    return ['-f', this.paths.config, ...this.more.flatMap((f) => ['-f', f])];
  }

  /**
   * Checks the configuration (`haproxy -c`); throws with HAProxy's own message. Not `-q`: it would hide the
   * reason too (an ALERT naming the file, line and keyword), leaving only an exit code.
   */
  async validate(): Promise<void> {
    if (!existsSync(HAPROXY_BIN)) throw new HaproxyMissingError();
    try {
      await run(HAPROXY_BIN, ['-c', ...this.files]);
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      const alerts = (e.stderr ?? '')
        .split('\n')
        .filter((l) => /\[(ALERT|WARNING)\]/.test(l))
        .map((l) => l.replace(/^\[(\w+)\]\s+\(\d+\)\s*:\s*/, '$1: '))
        .join('\n');
      throw new Error(`haproxy.cfg is not valid: ${(alerts || e.stderr || e.message).trim().slice(0, 2000)}`);
    }
  }

  /** The master a previous control plane left running (pidfile, the process, its master socket), if any. */
  async running(): Promise<number | null> {
    let pid: number;
    try {
      pid = Number(readFileSync(this.paths.pidfile, 'utf8').trim().split('\n')[0]);
    } catch {
      return null;
    }
    if (!pid || !alive(pid)) return null;
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(this.paths.config)) return null;
      const proc = await command(this.paths.master, 'show proc');
      return proc.includes('master') ? pid : null;
    } catch {
      return null;
    }
  }

  /** Adopts a running master (true) or starts one (false), and waits until its worker answers. */
  async ensure(): Promise<boolean> {
    const adopted = await this.running();
    if (adopted) {
      this.pid = adopted;
      this.child = null;
      await this.untilServing();
      return true;
    }
    await this.validate();
    // workers of a master that died may still hold the ports (SO_REUSEPORT would let them serve on, stale)
    await this.killLeftovers();
    rmSync(this.paths.master, { force: true });
    rmSync(this.paths.admin, { force: true });
    const child = spawn(HAPROXY_BIN, ['-W', '-S', `${this.paths.master},mode,600`, ...this.files], {
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let output = '';
    child.stderr?.on('data', (c) => (output = `${output}${c}`.slice(-4000)));
    child.unref();
    (child.stderr as { unref?: () => void } | null)?.unref?.();
    this.child = child;
    this.pid = child.pid ?? null;
    try {
      await started(child, 'haproxy');
      await this.untilServing(() => {
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`haproxy exited: ${output.trim().slice(-2000) || child.exitCode}`);
      });
    } catch (err) {
      if (child.exitCode === null) child.kill('SIGKILL');
      throw err;
    }
    return false;
  }

  /** Ends every HAProxy process of this configuration (none is adoptable when this runs). */
  async killLeftovers(): Promise<void> {
    const pids: number[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
        if (cmdline[0] === HAPROXY_BIN && cmdline.includes(this.paths.config)) pids.push(Number(entry));
      } catch {
        // gone
      }
    }
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    const deadline = Date.now() + 5000;
    while (pids.some(alive) && Date.now() < deadline) await pause(20);
  }

  private async untilServing(check: () => void = () => undefined): Promise<void> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      check();
      const info = await command(this.paths.admin, 'show info').catch(() => '');
      if (/^Pid: \d+/m.test(info)) return;
      if (Date.now() > deadline) throw new Error('haproxy did not start serving in 20 s');
      await pause(50);
    }
  }

  /** Whether the master runs. */
  alive(): boolean {
    if (this.pid === null) return false;
    if (this.child) return this.child.exitCode === null && this.child.signalCode === null;
    return alive(this.pid);
  }

  private async workerPid(): Promise<string | null> {
    const info = await command(this.paths.admin, 'show info').catch(() => '');
    return /^Pid: (\d+)/m.exec(info)?.[1] ?? null;
  }

  /** How many reloads the master could not make (`show proc`: `[failed: N]`). */
  private async failedReloads(): Promise<number> {
    const proc = await command(this.paths.master, 'show proc').catch(() => '');
    return Number(/\[failed: (\d+)\]/.exec(proc)?.[1] ?? 0);
  }

  /** Reloads the configuration without dropping a connection; resolves once the new worker answers. */
  async reload(): Promise<void> {
    await this.validate();
    if (!this.pid || !this.alive()) throw new Error('haproxy is not running');
    const before = await this.workerPid();
    const failedBefore = await this.failedReloads();
    process.kill(this.pid, 'SIGUSR2');
    this.reloads++;
    const deadline = Date.now() + 20_000;
    for (;;) {
      const now = await this.workerPid();
      if (now && now !== before) return;
      if ((await this.failedReloads()) > failedBefore)
        throw new Error('haproxy refused the new configuration (a port taken?); the previous one serves on');
      if (Date.now() > deadline) throw new Error('haproxy did not take the new configuration in 20 s');
      await pause(20);
    }
  }

  /** Stops the master and its workers, waiting until they are gone. */
  async stop(): Promise<void> {
    const pid = this.pid;
    this.pid = null;
    if (!pid) return;
    const worker = Number(await this.workerPid().catch(() => null)) || null;
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      return;
    }
    const deadline = Date.now() + 10_000;
    while (alive(pid) && (!this.child || this.child.exitCode === null) && Date.now() < deadline) await pause(20);
    if (alive(pid)) process.kill(pid, 'SIGKILL');
    // its worker follows the master at once; waited for, so that nothing holds the ports after a stop
    while (worker && alive(worker) && Date.now() < deadline) await pause(20);
    if (worker && alive(worker)) process.kill(worker, 'SIGKILL');
    rmSync(this.paths.pidfile, { force: true });
  }
}

/**
 * How many times the master has reloaded since it started (`show proc`: the master's `<reloads>`), or null when
 * none answers on `paths.master`. The edge reloads only for a held port freed and HAProxy's own upgrade
 * (docs/edge.md).
 */
export async function masterReloads(paths: HaproxyPaths, waitMs = 3000): Promise<number | null> {
  // the master executes itself again on a reload: its socket answers again a moment later
  const deadline = Date.now() + waitMs;
  for (;;) {
    const proc = await command(paths.master, 'show proc').catch(() => '');
    const n = /^\d+\s+master\s+(\d+)/m.exec(proc)?.[1];
    if (n !== undefined) return Number(n);
    if (Date.now() > deadline) return null;
    await pause(50);
  }
}

/**
 * Stops an HAProxy a control plane left running under `paths` (it was SIGKILLed, or given up on): `npm
 * start`'s stop leaves no data plane behind. False when none ran.
 */
export async function stopLeftDataPlane(paths: HaproxyPaths): Promise<boolean> {
  const haproxy = new HaproxyProcess(paths);
  const pid = await haproxy.running();
  if (!pid) return false;
  haproxy.pid = pid;
  await haproxy.stop();
  return true;
}
