/**
 * The CDN tier's process: Varnish 7.1 (`varnishd -F`), a child of the edge's control plane that outlives it.
 * Everything lives under `<DATA_DIR>/edge/varnish` (docs/cdn.md): the VCL, the admin secret (0600), the
 * pidfile, state.json (the ports it was started with), its output (varnishd.log) and its working directory
 * (`n/`). A control plane that starts finds a varnishd still running from its predecessor and adopts it,
 * cache and all; it restarts one that dies, and stops it on close.
 *
 * The lease: the VCL probes a unix socket the control plane serves (lease.sock). While the control plane is
 * dead, or says it lost track of purges (`suspend`), the lease is sick and nothing is served from the
 * cache, so a purge can never be missed (edge/purges.ts).
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  openSync,
  closeSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { closedAboveSync } from '../../host/traversable';
import { started } from '../../host/child-output';
import { adminCommand, type AdminAddress } from './admin';
import { alive, sleep, stop } from './pids';
import { freeListenPort, takenPortOf } from '../listen-ports';
import { renderVcl } from './vcl';

const INSTALL_HINT = 'apt-get install -y varnish';

interface VarnishOptions {
  /** `<DATA_DIR>/edge/varnish`. */
  dir: string;
  /**
   * Where HAProxy sends the CDN's requests: 127.0.0.1:port. Unset: the port of the last start (state.json),
   * else a free one, kept from then on (read it from `varnish.port`).
   */
  port?: number;
  /** The management CLI (-T), on 127.0.0.1; unset: as `port`. */
  adminPort?: number;
  /** HAProxy's internal origin listener on 127.0.0.1 (the one backend). */
  originPort: number;
  /** -s malloc,<size> (default 256m). */
  storage?: string;
  /** Ports not to pick (ENVIRONMENT_PORTS, which HAProxy listens on whole). */
  avoidPorts?: { from: number; to: number };
  logger?: { warn(obj: unknown, msg?: string): void; info(obj: unknown, msg?: string): void };
  /** varnishd's path (default: Debian's, else the one on PATH). */
  bin?: string;
}

interface State {
  port: number;
  adminPort: number;
}

type Resolved = VarnishOptions &
  State & {
    /** Which ports this edge picked itself (no option named them): only those move when another program took one. */
    picked: { port: boolean; adminPort: boolean };
  };

function readState(file: string): Partial<State> {
  try {
    const s = JSON.parse(readFileSync(file, 'utf8'));
    return { port: Number(s.port) || undefined, adminPort: Number(s.adminPort) || undefined };
  } catch {
    return {};
  }
}

function varnishdPath(): string {
  for (const p of ['/usr/sbin/varnishd', '/usr/local/sbin/varnishd']) if (existsSync(p)) return p;
  const found = spawnSync('sh', ['-c', 'command -v varnishd'], { encoding: 'utf8' }).stdout?.trim();
  if (found) return found;
  throw new Error(`The CDN needs Varnish 7 (varnishd), which is not installed: ${INSTALL_HINT}`);
}

/** Writes a file whole or not at all (write, then rename). */
export function writeAtomic(file: string, data: string | Buffer, mode = 0o644): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, data, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, file);
}

export class Varnish {
  readonly files: { vcl: string; secret: string; pid: string; state: string; log: string; lease: string; work: string };
  /** Whether a varnishd left by an earlier control plane was adopted (its cache may hold entries). */
  adopted = false;
  private pid = 0;
  private watch: NodeJS.Timeout | null = null;
  private closing = false;
  private serving = false;
  private lease: http.Server | null = null;
  private restarting: Promise<void> | null = null;
  private readonly admin: AdminAddress;
  /** Called after varnishd died and was started again (with an empty cache). */
  onRestart: () => void = () => undefined;
  /**
   * Called when varnishd, started again, listens on another port than before (another program took its own while
   * it was down): HAProxy's CDN backend must name the new one.
   */
  onPortChange: (port: number) => void = () => undefined;

  private constructor(private readonly o: Resolved) {
    const f = (name: string) => path.join(o.dir, name);
    this.files = {
      vcl: f('edge.vcl'),
      secret: f('secret'),
      pid: f('varnishd.pid'),
      state: f('state.json'),
      log: f('varnishd.log'),
      lease: f('lease.sock'),
      work: f('n'),
    };
    mkdirSync(o.dir, { recursive: true, mode: 0o755 });
    if (!existsSync(this.files.secret)) writeAtomic(this.files.secret, randomBytes(32).toString('hex'), 0o600);
    this.admin = { host: '127.0.0.1', port: o.adminPort, secret: readFileSync(this.files.secret) };
  }

  /** Adopts the running varnishd of this directory, or starts one; the cache serves once `resume()` is called. */
  static async start(o: VarnishOptions): Promise<Varnish> {
    const saved = readState(path.join(o.dir, 'state.json'));
    const avoid = o.avoidPorts ?? null;
    const port = o.port ?? saved.port ?? (await freeListenPort('127.0.0.1', avoid));
    const adminPort = o.adminPort ?? saved.adminPort ?? (await freeListenPort('127.0.0.1', avoid));
    const picked = { port: o.port === undefined, adminPort: o.adminPort === undefined };
    const v = new Varnish({ ...o, port, adminPort, picked });
    try {
      await v.begin();
    } catch (err) {
      await v.detach();
      throw err;
    }
    return v;
  }

  /**
   * Forgets the ports kept in `dir` when `port` is one of them (another program took it before varnishd bound it):
   * the next start picks new ones. A running varnishd holds its ports, so none runs with them.
   */
  static forgetPort(dir: string, port: number): void {
    const file = path.join(dir, 'state.json');
    const saved = readState(file);
    if (saved.port === port || saved.adminPort === port) rmSync(file, { force: true });
  }

  /** Where HAProxy sends the CDN's requests (127.0.0.1). */
  get port(): number {
    return this.o.port;
  }

  get processId(): number {
    return this.pid;
  }

  /** One management command (words quoted as needed); its answer. */
  command(...words: string[]): Promise<string> {
    return adminCommand(this.admin, words);
  }

  private async begin(): Promise<void> {
    await this.holdLease();
    const vcl = renderVcl({ originPort: this.o.originPort, leaseSocket: this.files.lease });
    const before = existsSync(this.files.vcl) ? readFileSync(this.files.vcl, 'utf8') : null;
    writeAtomic(this.files.vcl, vcl);
    const pid = await this.runningPid();
    if (pid) {
      this.pid = pid;
      this.adopted = true;
      try {
        if (before !== vcl) await this.reloadVcl();
        // A sick lease until the purge follower says the cache may serve (it may have missed purges meanwhile).
        await this.command('backend.set_health', '*.lease', 'sick');
      } catch (err) {
        this.o.logger?.warn({ err: (err as Error).message }, 'the running varnishd refused its control plane');
        await stop(pid);
        await this.spawn();
      }
    } else {
      await this.spawn();
    }
    this.watch = setInterval(() => {
      if (!this.closing && !this.restarting && !alive(this.pid)) void this.restart();
    }, 1000);
    this.watch.unref();
  }

  /**
   * Serves the lease socket: 200 while the cache may serve, 503 before. A lease that answers already belongs
   * to another live control plane, whose varnishd this one must not take: each edge needs its own dir.
   */
  private async holdLease(): Promise<void> {
    const taken = await new Promise<boolean>((resolve) => {
      const probe = net.connect(this.files.lease);
      probe.once('connect', () => {
        probe.destroy();
        resolve(true);
      });
      probe.once('error', () => resolve(false));
    });
    if (taken) throw new Error(`another edge control plane runs the Varnish of ${this.o.dir}`);
    rmSync(this.files.lease, { force: true });
    const lease = http.createServer((_req, res) => {
      res.writeHead(this.serving ? 200 : 503);
      res.end();
    });
    await new Promise<void>((resolve, reject) => {
      lease.once('error', reject);
      lease.listen(this.files.lease, () => resolve());
    });
    chmodSync(this.files.lease, 0o666);
    this.lease = lease;
  }

  /** Loads the VCL file into the running varnishd, uses it, and discards the ones it replaced. */
  private async reloadVcl(): Promise<void> {
    const name = `v${Date.now().toString(36)}`;
    await this.command('vcl.load', name, this.files.vcl);
    await this.command('vcl.use', name);
    for (const line of (await this.command('vcl.list')).split('\n')) {
      const [status, , , , old] = line.trim().split(/\s+/);
      if (status === 'available' && old && old !== name) await this.command('vcl.discard', old).catch(() => undefined); // still busy: discarded later
    }
  }

  /** The pid of a varnishd of this directory that answers on the admin port it was started with, if any. */
  private async runningPid(): Promise<number | null> {
    let pid: number;
    let state: State;
    try {
      pid = Number(readFileSync(this.files.pid, 'utf8').trim());
      state = JSON.parse(readFileSync(this.files.state, 'utf8'));
    } catch {
      return null;
    }
    if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return null;
    let cmdline = '';
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      return null;
    }
    if (!cmdline.includes('varnishd') || !cmdline.split('\0').includes(this.files.work)) return null;
    if (state.port === this.o.port && state.adminPort === this.o.adminPort) return pid;
    // Started with other ports: it goes, a new one starts.
    await stop(pid);
    return null;
  }

  private async spawn(): Promise<void> {
    const bin = this.o.bin ?? varnishdPath();
    mkdirSync(this.files.work, { recursive: true });
    // varnishd's jail user must reach its files: every directory down to them lets others through
    const jail = closedAboveSync(this.o.dir, { self: true }) === null ? [] : ['-j', 'none'];
    if (jail.length > 0)
      this.o.logger?.warn({ dir: this.o.dir }, 'varnishd runs as root: its jail user cannot reach DATA_DIR');
    const args = [
      '-F',
      '-n',
      this.files.work,
      '-a',
      `127.0.0.1:${this.o.port}`,
      '-T',
      `127.0.0.1:${this.o.adminPort}`,
      '-S',
      this.files.secret,
      '-f',
      this.files.vcl,
      '-P',
      this.files.pid,
      '-s',
      `malloc,${this.o.storage ?? '256m'}`,
      '-l',
      '16m',
      ...jail,
      // Accept-Encoding reaches the app as sent (compression is HAProxy's); no stale answers.
      ...['-p', 'http_gzip_support=off', '-p', 'default_grace=0', '-p', 'default_keep=0'],
      ...['-p', 'syslog_cli_traffic=off'],
    ];
    rmSync(this.files.pid, { force: true });
    writeAtomic(this.files.state, JSON.stringify({ port: this.o.port, adminPort: this.o.adminPort }));
    const log = openSync(this.files.log, 'a');
    const child = spawn(bin, args, { detached: true, stdio: ['ignore', log, log] });
    closeSync(log);
    child.unref();
    this.adopted = false;
    let exited = false;
    child.once('exit', () => {
      exited = true;
    });
    await started(child, 'varnishd');
    this.pid = child.pid!;
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (exited) throw new Error(`varnishd exited at start: ${this.tail()}`);
      try {
        if ((await this.command('status')).includes('running')) break;
        await sleep(100);
      } catch (err) {
        if (Date.now() > deadline) {
          await stop(this.pid);
          throw new Error(`varnishd did not answer: ${(err as Error).message}`);
        }
        await sleep(100);
      }
    }
    if (!this.serving) await this.command('backend.set_health', '*.lease', 'sick');
  }

  private tail(): string {
    try {
      // enough lines for the cause as well as the exit (a child that stopped, then the listener not opened again)
      return readFileSync(this.files.log, 'utf8').trim().split('\n').slice(-12).join(' | ');
    } catch {
      return 'no output';
    }
  }

  private restart(): Promise<void> {
    this.restarting = (async () => {
      this.o.logger?.warn({ pid: this.pid, output: this.tail() }, 'varnishd died; starting it again');
      const before = this.o.port;
      for (;;) {
        try {
          await this.spawn();
          break;
        } catch (err) {
          if (this.closing) return;
          this.o.logger?.warn({ err: (err as Error).message }, 'varnishd could not start again');
          // a port of its own that another program took while it was down: another pick, at once
          if (await this.movePort(takenPortOf((err as Error).message))) continue;
          await sleep(1000);
        }
      }
      if (this.serving) await this.resume().catch(() => undefined);
      if (this.o.port !== before) this.onPortChange(this.o.port);
      this.onRestart();
    })().finally(() => {
      this.restarting = null;
    });
    return this.restarting;
  }

  /**
   * Picks another port for the listener or the admin port when `taken` is one this Varnish picked itself (an
   * operator's port stays: its start is tried again until it is free); whether it did.
   */
  private async movePort(taken: number | null): Promise<boolean> {
    const which = taken === this.o.port ? 'port' : taken === this.o.adminPort ? 'adminPort' : null;
    if (which === null || !this.o.picked[which]) return false;
    const port = await freeListenPort('127.0.0.1', this.o.avoidPorts ?? null);
    this.o[which] = port;
    if (which === 'adminPort') this.admin.port = port;
    this.o.logger?.warn({ taken, port, which }, 'another program took a port of varnishd: it listens on another');
    return true;
  }

  /** The cache may serve (the purge follower is up to date): the lease answers and is trusted again. */
  async resume(): Promise<void> {
    this.serving = true;
    await this.command('backend.set_health', '*.lease', 'auto');
    // Until the probe has seen the lease, nothing is served from the cache.
    const deadline = Date.now() + 10_000;
    while (!(await this.leaseHealthy()))
      if (Date.now() > deadline) {
        this.o.logger?.warn({ socket: this.files.lease }, 'Varnish does not reach the lease: it serves nothing cached');
        return;
      } else await sleep(100);
  }

  /** Nothing is served from the cache until `resume()` (the purge follower lost track of purges). */
  async suspend(): Promise<void> {
    this.serving = false;
    await this.command('backend.set_health', '*.lease', 'sick');
  }

  async leaseHealthy(): Promise<boolean> {
    const list = await this.command('backend.list').catch(() => '');
    return list.split('\n').some((l) => /\.lease\s/.test(l) && /\shealthy\s/.test(l.replace(/^\S+\s+\S+/, '')));
  }

  /** Adds a ban (varnish-cli `ban` with its words). */
  async ban(words: string[]): Promise<void> {
    await this.command('ban', ...words);
  }

  /** Stops varnishd (the cache goes with it) and the lease. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.watch) clearInterval(this.watch);
    await this.restarting?.catch(() => undefined);
    await new Promise<void>((resolve) => (this.lease ? this.lease.close(() => resolve()) : resolve()));
    this.lease = null;
    if (this.pid) await stop(this.pid);
    rmSync(this.files.pid, { force: true });
  }

  /** Leaves varnishd running (as a control plane killed would), for a successor to adopt. */
  async detach(): Promise<void> {
    this.closing = true;
    if (this.watch) clearInterval(this.watch);
    await new Promise<void>((resolve) => (this.lease ? this.lease.close(() => resolve()) : resolve()));
    this.lease = null;
  }
}
