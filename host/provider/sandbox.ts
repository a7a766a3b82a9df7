/**
 * The tenant sandbox of the local provider: how a build step, deploy step or web process of one environment
 * is run so that it reaches neither the console (its database, secrets, environment, loopback services) nor
 * another environment. A cloud provider would put its own `openJail`/`launch` beside this one.
 *
 * Per environment (its port is unique on this host, so everything is derived from it):
 * - its own uid/gid `100000 + port`; its HOME `<env dir>/home` and its release trees are owned by it (0700);
 *   the environment's directory, `releases/`, current.json and web.log stay root's.
 * - `namespaces` mode (Linux, root, bubblewrap + nsenter + ip + nft): its own network namespace behind a veth
 *   pair and the host firewall (sandbox-network.ts); the web process is reached at the veth address. Each
 *   process runs under bwrap: its own user, pid, ipc and uts namespaces (no nested user namespaces), a
 *   read-only system (/usr, /etc, /opt, /sys and the /bin, /lib links), fresh /dev, /proc, /tmp, /var/tmp
 *   and /run (so no host unix socket such as /var/run/postgresql), and of DATA_DIR only its own HOME and
 *   working tree.
 * - `uid` mode (root without those tools) drops to the uid only; `none` (not root, not Linux) runs as the
 *   worker. Both are announced once, loudly.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { chmod, lstat, mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  ensureHostNetwork,
  ensureNetwork,
  jailAddresses,
  netnsName,
  removeNetwork,
  setServicesPorts,
} from './sandbox-network';
import { volumeOf } from './volume';
import { assertTraversable } from '../traversable';
import { withDir } from '../no-follow';
import { environmentDir, safeSegment } from '../environment-dir';
import { MadeOnce } from '../per-key';

export { environmentDir, safeSegment };

export { closeServicesPort, jailAddresses, netnsName, removeNetwork, removeNetworksInRange } from './sandbox-network';

export type SandboxMode = 'namespaces' | 'uid' | 'none';

/** One environment's sandbox on this host. */
export interface Jail {
  mode: SandboxMode;
  envId: string;
  port: number;
  /** null in `none` mode: processes run as the worker. */
  uid: number | null;
  gid: number | null;
  /** The environment's HOME (host path; the same path inside the sandbox). */
  home: string;
  /** Network namespace name, or null (no namespaces). */
  netns: string | null;
  /** Where the host reaches the environment's processes (its web process): the veth address, else 127.0.0.1. */
  address: string;
}

/** How to spawn one sandboxed command. */
export interface Launch {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string | undefined>;
  uid?: number;
  gid?: number;
}

export const UID_BASE = 100_000;
/** The environment's HOME: its own, writable, kept across builds and releases. */
export function environmentHome(dataDir: string, envId: string): string {
  return path.join(environmentDir(dataDir, envId), 'home');
}

export function tenantUid(port: number): number {
  return UID_BASE + port;
}

// ------------------------------------------------------------------------------------------------------
// What this host allows

let detected: { mode: SandboxMode; reason: string } | null = null;
let warned = false;

/** The strongest mode this host allows (checked once per process, with a real trial of bwrap). */
export function sandboxMode(warn: (message: string) => void = (m) => console.warn(m)): {
  mode: SandboxMode;
  reason: string;
} {
  if (!detected) detected = detect();
  if (detected.mode !== 'namespaces' && !warned) {
    warned = true;
    warn(
      `!!! TENANT ISOLATION IS REDUCED (${detected.mode === 'uid' ? 'separate uids only, no namespaces' : 'none: tenant code runs as the worker'}): ${detected.reason}. ` +
        `Build steps and web processes can reach what this process can. Run the worker as root on Linux with bubblewrap, iproute2 and nftables installed (apt-get install -y bubblewrap nftables).`,
    );
  }
  return detected;
}

function detect(): { mode: SandboxMode; reason: string } {
  if (process.platform !== 'linux') return { mode: 'none', reason: `the host is ${process.platform}, not Linux` };
  if (process.getuid?.() !== 0) return { mode: 'none', reason: 'the worker does not run as root' };
  const missing = ['bwrap', 'nsenter', 'unshare', 'ip', 'nft'].filter((tool) => !onPath(tool));
  if (missing.length) return { mode: 'uid', reason: `missing on PATH: ${missing.join(', ')}` };
  const trials: [string, string, string[]][] = [
    [
      'bwrap cannot create its namespaces here',
      'nsenter',
      [
        '--setuid=65534',
        '--setgid=65534',
        '--',
        'bwrap',
        ...systemMounts(),
        '--unshare-user',
        '--disable-userns',
        '--unshare-pid',
        '--proc',
        '/proc',
        '--',
        '/bin/true',
      ],
    ],
    ['no network namespaces here', 'unshare', ['--net', '--', '/bin/true']],
    ['nftables is not usable here', 'nft', ['list', 'tables']],
  ];
  for (const [what, file, args] of trials) {
    try {
      execFileSync(file, args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
    } catch (err) {
      const stderr = String((err as { stderr?: Buffer }).stderr ?? (err as Error).message).trim();
      return { mode: 'uid', reason: `${what}: ${stderr}` };
    }
  }
  return { mode: 'namespaces', reason: 'bwrap, network namespaces and nftables' };
}

function onPath(tool: string): boolean {
  const dirs = (process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin').split(':').concat(['/usr/sbin', '/sbin']);
  return dirs.some((d) => d && existsSync(path.join(d, tool)));
}

// ------------------------------------------------------------------------------------------------------
// Setting an environment up

/** Each environment's sandbox once set up (host/per-key.ts: the jail is kept, not the first caller's context). */
const opened = new MadeOnce<Jail>();
let sharedDirs: string[] = [];

/**
 * Host directories every sandbox sees read-only (SANDBOX_SHARED_DIRS), and the port of the password-protected
 * services server environments reach at their gateway (and one that trusts, kept closed), DNATed to
 * `servicesTarget`; set by the worker.
 */
export function configureSandbox(o: {
  sharedDirs: string[];
  servicesPort?: number | null;
  trustingPort?: number | null;
  /** The services server's IPv4 address as this host sees it (SERVICES_HOST); default 127.0.0.1. */
  servicesTarget?: string;
}): void {
  sharedDirs = o.sharedDirs.map((d) => path.resolve(d));
  setServicesPorts({ open: o.servicesPort ?? null, close: o.trustingPort ?? null, target: o.servicesTarget });
}

/**
 * The environment's sandbox, set up if needed (directories and their owners, network namespace, firewall).
 * Idempotent. The directories are set up once per process; the network is checked every time (two `ip`
 * calls) and made again when it is gone (a host restart, an operator), so that every step and every
 * restore of the worker finds it whole.
 */
export async function openJail(dataDir: string, envId: string, port: number): Promise<Jail> {
  const key = `${path.resolve(dataDir)}\0${envId}\0${port}`;
  const ready = await opened.get(key, () => setUp(path.resolve(dataDir), envId, port));
  if (ready.mode === 'namespaces') {
    await ensureHostNetwork();
    await ensureNetwork(port);
  }
  return ready;
}

/** Takes the environment's network off this host (the environment is retired). Its files stay. */
export async function closeJail(dataDir: string, envId: string, port: number): Promise<void> {
  opened.forget(`${path.resolve(dataDir)}\0${envId}\0${port}`);
  if (sandboxMode().mode === 'namespaces') await removeNetwork(port);
}

async function setUp(dataDir: string, envId: string, port: number): Promise<Jail> {
  const { mode } = sandboxMode();
  const uid = mode === 'none' ? null : tenantUid(port);
  const envDir = environmentDir(dataDir, envId);
  const home = environmentHome(dataDir, envId);
  await mkdir(envDir, { recursive: true });
  // HOME is the tenant's: made, owned and moded from descriptors (no-follow.ts), never by path
  await withDir(envDir, [], async (dir) => {
    const h = await dir.dir(path.basename(home), { create: 0o700 });
    try {
      if (uid === null) return;
      await hardenDataDir(dataDir);
      await dir.chmod(0o711);
      await h.chown(uid, uid);
      await h.chmod(0o700);
    } finally {
      await h.close();
    }
  });
  // bwrap binds HOME as the tenant: every directory above it must let others through
  if (uid !== null) await assertTraversable(home, `environments under ${path.dirname(home)} cannot be sandboxed`);
  const namespaces = mode === 'namespaces';
  const netns = namespaces ? netnsName(port) : null;
  const address = namespaces ? jailAddresses(port).env : '127.0.0.1';
  return { mode, envId, port, uid, gid: uid, home, netns, address };
}

/** At worker start: DATA_DIR's modes as the sandbox wants them, before any environment runs. */
export async function prepareHost(dataDir: string, warn: (message: string) => void = (m) => console.warn(m)) {
  if (sandboxMode().mode !== 'none') await hardenDataDir(path.resolve(dataDir));
  // Root's `tar -c` of a volume relies on it: without it a tenant could hard-link a file it cannot read into
  // its volume, and a backup would hold it (docs/isolation.md).
  const hardlinks = await readFile('/proc/sys/fs/protected_hardlinks', 'utf8').catch(() => '');
  if (hardlinks.trim() === '0') {
    warn(
      '!!! fs.protected_hardlinks is 0: a tenant can hard-link files it cannot read into its volume, and backups would hold them. Set it to 1 (sysctl -w fs.protected_hardlinks=1).',
    );
  }
}

/**
 * DATA_DIR and DATA_DIR/environments: traverse-only for others (a tenant uid must reach its own HOME to be
 * bound into its sandbox); every other entry of DATA_DIR (secrets, git mirrors, mail, Temporal data) 0700,
 * but `edge`: traverse-only too, for the data plane's own users (edge/privileges.ts), with its secrets in
 * 0700 directories of its own.
 */
async function hardenDataDir(dataDir: string): Promise<void> {
  await mkdir(path.join(dataDir, 'environments'), { recursive: true });
  await chmod(dataDir, 0o711);
  await chmod(path.join(dataDir, 'environments'), 0o711);
  for (const name of await readdir(dataDir)) {
    // postgres: owned and guarded by its own user; storage: the default root of the environments' disks; edge:
    // its own modes (edge/privileges.ts)
    if (name === 'environments' || name === 'postgres' || name === 'storage' || name === 'edge') continue;
    const p = path.join(dataDir, name);
    const st = await lstat(p).catch(() => null);
    if (st?.isDirectory() && (st.mode & 0o077) !== 0) await chmod(p, 0o700).catch(() => undefined);
  }
}

// ------------------------------------------------------------------------------------------------------
// Running a command in it

/**
 * How to spawn `/bin/sh -c command` for the environment, in `cwd` (which, like HOME, it may write), with
 * exactly `env` (nothing of the worker's own environment).
 */
export function launch(
  jail: Jail,
  command: string,
  o: { cwd: string; env: Record<string, string | undefined>; outliveParent?: boolean },
): Launch {
  const env = { ...o.env, HOME: jail.home };
  if (jail.mode === 'none' || jail.uid === null || jail.gid === null) {
    return { file: '/bin/sh', args: ['-c', command], cwd: o.cwd, env };
  }
  if (jail.mode === 'uid') {
    return { file: '/bin/sh', args: ['-c', command], cwd: o.cwd, env, uid: jail.uid, gid: jail.gid };
  }
  // The environment's volume (VC_VOLUME_PATH, set by the console: VC_ names are reserved to it), bound at its
  // real path so the variable says the same inside and out; only ever this environment's (volume.ts).
  const volume = volumeOf(jail, o.env);
  // A release tree (being built, or built) is seen at RELEASE_MOUNT on every host, whatever its DATA_DIR: the
  // absolute paths its build wrote keep working where another host unpacked it (release-archive.ts).
  const cwd = path.resolve(o.cwd);
  const inside = releaseMount(jail, cwd) ?? cwd;
  const binds = new Map<string, string>([[jail.home, jail.home]]);
  binds.set(inside, cwd);
  if (volume) binds.set(volume, volume);
  const args = [
    `--net=/run/netns/${jail.netns}`,
    `--setuid=${jail.uid}`,
    `--setgid=${jail.gid}`,
    '--',
    'bwrap',
    '--unshare-user',
    '--disable-userns',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    // No cgroup namespace: its root would be fixed when bwrap creates it, a moment before or after the
    // worker places the process tree in its plan's cgroup (cgroups.ts, right after spawn), so the tenant
    // would see "/" or its real leaf at random. The path tells it nothing secret (its environment id).
    '--hostname',
    'app',
    // A web process outlives its worker (the edge keeps serving it; the next worker takes over from it);
    // build and deploy steps do not.
    ...(o.outliveParent ? [] : ['--die-with-parent']),
    ...systemMounts(),
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
    '--tmpfs',
    '/var/tmp',
    '--tmpfs',
    '/run',
    '--symlink',
    '../run',
    '/var/run',
    ...sharedDirs.flatMap((d) => ['--ro-bind-try', d, d]),
    ...[...binds].flatMap(([dest, src]) => ['--bind', src, dest]),
    '--chdir',
    inside,
    '--',
    '/bin/sh',
    '-c',
    command,
  ];
  return { file: 'nsenter', args, cwd: o.cwd, env };
}

/** Where a sandbox sees its release tree (namespaces mode): one path on every host. */
export const RELEASE_MOUNT = '/app';

/**
 * RELEASE_MOUNT when `dir` is one of the environment's release trees on this host (`<env dir>/releases/<id>`, or
 * the temporary tree of a build in progress), else null.
 */
function releaseMount(jail: Pick<Jail, 'home'>, dir: string): string | null {
  const releases = path.join(path.dirname(jail.home), 'releases');
  return path.dirname(dir) === releases && path.basename(dir) !== '' ? RELEASE_MOUNT : null;
}

/** The read-only system a sandbox sees: /usr, /etc, /opt, /sys and the merged-/usr links (or directories). */
function systemMounts(): string[] {
  const out: string[] = [
    '--ro-bind',
    '/usr',
    '/usr',
    '--ro-bind',
    '/etc',
    '/etc',
    '--ro-bind-try',
    '/opt',
    '/opt',
    '--ro-bind-try',
    '/sys',
    '/sys',
  ];
  for (const top of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']) {
    let target: string | null = null;
    try {
      target = readlinkSafe(top);
    } catch {
      continue; // absent
    }
    if (target !== null) out.push('--symlink', target, top);
    else out.push('--ro-bind', top, top);
  }
  return out;
}

/** A symlink's target, null for a real directory; throws when absent. */
function readlinkSafe(p: string): string | null {
  return lstatSync(p).isSymbolicLink() ? readlinkSync(p) : null;
}

/**
 * Hands the tree (a fresh checkout in a directory of root's) to the environment's uid, from its descriptor:
 * `chown -R -P` there follows no link, and the directory's own mode is set with fchmod (no-follow.ts).
 */
export async function giveTree(jail: Jail, dir: string): Promise<void> {
  if (jail.uid === null || jail.gid === null) return;
  const { uid, gid } = jail;
  await withDir(path.dirname(dir), [path.basename(dir)], async (tree) => {
    await tree.chownTree(uid, gid);
    await tree.chmod(0o700);
  });
}
