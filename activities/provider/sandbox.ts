/**
 * The tenant sandbox of the local provider: how a build step, deploy step or web process of one environment
 * is run so that it reaches neither the console (its database, secrets, environment, loopback services) nor
 * another environment. A cloud provider would put its own `openJail`/`launch` beside this one.
 *
 * Per environment (its port is unique on this host, so everything is derived from it):
 * - its own uid/gid `100000 + port`; its HOME `<env dir>/home` and its release trees are owned by it (0700);
 *   the environment's directory, `releases/`, current.json and web.log stay root's.
 * - `namespaces` mode (Linux, root, bubblewrap + nsenter + ip + nft): a network namespace `vc-<port>` joined to
 *   the host by a veth pair (`vch<port>` on the host, `eth0` inside) on a /30 of 10.200.0.0/14; host firewall
 *   (nft table `inet vc_sandbox`): nothing from a veth reaches the host itself (its loopback services, its
 *   other addresses), another environment, or a private/link-local/loopback address, except the resolvers
 *   of /etc/resolv.conf on port 53; the rest is masqueraded out. Inside the namespace, TCP arriving on eth0 is
 *   sent to 127.0.0.1 (route_localnet), so a web process bound to 127.0.0.1 or 0.0.0.0 is reached at
 *   `<env address>:PORT` by the proxy and the health probes. Each process then runs under bwrap: its own
 *   user, pid, ipc and uts namespaces (no nested user namespaces), a read-only system (/usr, /etc, /opt and
 *   the /bin, /lib links), fresh /dev, /proc, /tmp, /var/tmp, /run (so no host unix socket such as
 *   /var/run/postgresql), and of DATA_DIR only its own HOME and working tree.
 * - `uid` mode (root without those tools) drops to the uid only; `none` (not root, not Linux) runs as the
 *   worker. Both are announced once, loudly.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { chmod, chown, lstat, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

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
const NETWORK_BASE = (10 << 24) | (200 << 16); // 10.200.0.0/14: a /30 for each port 0-65535
const NETWORK_CIDR = '10.200.0.0/14';
const PRIVATE_RANGES = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '224.0.0.0/3',
];

export function environmentDir(dataDir: string, envId: string): string {
  return path.join(path.resolve(dataDir), 'environments', safeSegment(envId, 'environment id'));
}

/** The environment's HOME: its own, writable, kept across builds and releases. */
export function environmentHome(dataDir: string, envId: string): string {
  return path.join(environmentDir(dataDir, envId), 'home');
}

export function tenantUid(port: number): number {
  return UID_BASE + port;
}

/** Host side and environment side of the environment's /30. */
export function jailAddresses(port: number): { host: string; env: string } {
  const base = NETWORK_BASE + port * 4;
  return { host: ipv4(base + 1), env: ipv4(base + 2) };
}

export function netnsName(port: number): string {
  return `vc-${port}`;
}

function vethName(port: number): string {
  return `vch${port}`;
}

// ------------------------------------------------------------------------------------------------------
// What this host allows

let detected: { mode: SandboxMode; reason: string } | null = null;
let warned = false;

/** The strongest mode this host allows (checked once per process, with a real trial of bwrap). */
export function sandboxMode(warn: (message: string) => void = (m) => console.warn(m)): { mode: SandboxMode; reason: string } {
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
  const missing = ['bwrap', 'nsenter', 'ip', 'nft'].filter((tool) => !onPath(tool));
  if (missing.length) return { mode: 'uid', reason: `missing on PATH: ${missing.join(', ')}` };
  try {
    execFileSync('nsenter', ['--setuid=65534', '--setgid=65534', '--', 'bwrap', ...systemMounts(), '--unshare-user', '--disable-userns', '--unshare-pid', '--proc', '/proc', '--', '/bin/true'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 10_000,
    });
  } catch (err) {
    const stderr = String((err as { stderr?: Buffer }).stderr ?? (err as Error).message).trim();
    return { mode: 'uid', reason: `bwrap cannot create its namespaces here: ${stderr}` };
  }
  return { mode: 'namespaces', reason: 'bwrap, network namespaces and nftables' };
}

function onPath(tool: string): boolean {
  const dirs = (process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin').split(':').concat(['/usr/sbin', '/sbin']);
  return dirs.some((d) => d && existsSync(path.join(d, tool)));
}

// ------------------------------------------------------------------------------------------------------
// Setting an environment up

const opened = new Map<string, Promise<Jail>>();

/**
 * The environment's sandbox, set up if needed (directories and their owners, network namespace, firewall).
 * Idempotent, and cheap after the first call in a process; a worker start calls it again for every
 * environment it restores (the namespaces do not survive a host restart).
 */
export function openJail(dataDir: string, envId: string, port: number): Promise<Jail> {
  const key = `${path.resolve(dataDir)}\0${envId}\0${port}`;
  let jail = opened.get(key);
  if (!jail) {
    jail = setUp(path.resolve(dataDir), envId, port);
    opened.set(key, jail);
    jail.catch(() => opened.delete(key));
  }
  return jail;
}

/** Takes the environment's network off this host (the environment is retired). Its files stay. */
export async function closeJail(dataDir: string, envId: string, port: number): Promise<void> {
  opened.delete(`${path.resolve(dataDir)}\0${envId}\0${port}`);
  if (sandboxMode().mode === 'namespaces') await removeNetwork(port);
}

async function setUp(dataDir: string, envId: string, port: number): Promise<Jail> {
  const { mode } = sandboxMode();
  const uid = mode === 'none' ? null : tenantUid(port);
  const envDir = environmentDir(dataDir, envId);
  const home = environmentHome(dataDir, envId);
  await mkdir(home, { recursive: true });
  if (uid !== null) {
    await hardenDataDir(dataDir);
    await chmod(envDir, 0o711);
    await chown(home, uid, uid);
    await chmod(home, 0o700);
    await checkTraversable(home);
  }
  let netns: string | null = null;
  let address = '127.0.0.1';
  if (mode === 'namespaces') {
    await ensureHostNetwork();
    await ensureNetwork(port);
    netns = netnsName(port);
    address = jailAddresses(port).env;
  }
  return { mode, envId, port, uid, gid: uid, home, netns, address };
}

/**
 * DATA_DIR and DATA_DIR/environments: traverse-only for others (a tenant uid must reach its own HOME to be
 * bound into its sandbox); every other entry of DATA_DIR (secrets, git mirrors, mail, Temporal data) 0700.
 */
async function hardenDataDir(dataDir: string): Promise<void> {
  await mkdir(path.join(dataDir, 'environments'), { recursive: true });
  await chmod(dataDir, 0o711);
  await chmod(path.join(dataDir, 'environments'), 0o711);
  for (const name of await readdir(dataDir)) {
    if (name === 'environments' || name === 'postgres') continue; // postgres: owned and guarded by its own user
    const p = path.join(dataDir, name);
    const st = await lstat(p).catch(() => null);
    if (st?.isDirectory() && (st.mode & 0o077) !== 0) await chmod(p, 0o700).catch(() => undefined);
  }
}

/** bwrap binds HOME as the tenant: every directory above it must let others through. */
async function checkTraversable(dir: string): Promise<void> {
  for (let d = path.dirname(dir); ; d = path.dirname(d)) {
    const st = await lstat(d);
    if ((st.mode & 0o001) === 0) {
      throw new Error(`${d} does not let other users through (mode ${(st.mode & 0o777).toString(8)}): environments under it cannot be sandboxed; chmod o+x it`);
    }
    if (d === path.dirname(d)) return;
  }
}

let hostNetwork: Promise<void> | null = null;

/** ip_forward, and the nft tables every environment's veth is filtered and masqueraded by (atomic, idempotent). */
function ensureHostNetwork(): Promise<void> {
  hostNetwork ??= (async () => {
    const resolvers = readResolvers();
    const rules = `
table inet vc_sandbox {}
flush table inet vc_sandbox
table inet vc_sandbox {
  chain input {
    type filter hook input priority filter - 10; policy accept;
    iifname "vch*" ct state established,related accept
    iifname "vch*" drop
  }
  chain forward {
    type filter hook forward priority filter - 10; policy accept;
    iifname "vch*" oifname "vch*" drop
    oifname "vch*" ct state established,related accept
    oifname "vch*" drop
    iifname "vch*" ct state established,related accept
    iifname "vch*" meta nfproto ipv6 drop
${resolvers.length ? `    iifname "vch*" ip daddr { ${resolvers.join(', ')} } meta l4proto { tcp, udp } th dport 53 accept\n` : ''}    iifname "vch*" ip daddr { ${PRIVATE_RANGES.join(', ')} } drop
    iifname "vch*" accept
  }
}
table ip vc_sandbox_nat {}
flush table ip vc_sandbox_nat
table ip vc_sandbox_nat {
  chain postrouting {
    type nat hook postrouting priority srcnat; policy accept;
    ip saddr ${NETWORK_CIDR} oifname != "vch*" masquerade
  }
}
`;
    await nft(rules);
    await run('sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
  })();
  hostNetwork.catch(() => {
    hostNetwork = null;
  });
  return hostNetwork;
}

/** The IPv4 name servers of /etc/resolv.conf: an environment may ask them (port 53), nothing else private. */
function readResolvers(): string[] {
  try {
    return readFileSync('/etc/resolv.conf', 'utf8')
      .split('\n')
      .map((l) => /^\s*nameserver\s+(\d+\.\d+\.\d+\.\d+)\s*$/.exec(l)?.[1])
      .filter((a): a is string => Boolean(a) && !a!.startsWith('127.'));
  } catch {
    return [];
  }
}

const networkLocks = new Map<number, Promise<void>>();

/** The environment's namespace and veth pair, as they should be; a half-made one is made again. */
function ensureNetwork(port: number): Promise<void> {
  const prev = networkLocks.get(port) ?? Promise.resolve();
  const next = prev.then(async () => {
    if (await networkReady(port)) return;
    await removeNetwork(port);
    try {
      await createNetwork(port);
    } catch (err) {
      // another worker process made it meanwhile
      if (await networkReady(port)) return;
      throw err;
    }
  });
  networkLocks.set(port, next.catch(() => undefined));
  return next;
}

async function networkReady(port: number): Promise<boolean> {
  const ns = netnsName(port);
  const { host, env } = jailAddresses(port);
  if (!existsSync(`/run/netns/${ns}`)) return false;
  const outside = await run('ip', ['-4', '-o', 'addr', 'show', 'dev', vethName(port)]).catch(() => null);
  const inside = await run('ip', ['-n', ns, '-4', '-o', 'addr', 'show', 'dev', 'eth0']).catch(() => null);
  return Boolean(outside?.stdout.includes(`${host}/30`) && inside?.stdout.includes(`${env}/30`));
}

async function createNetwork(port: number): Promise<void> {
  const ns = netnsName(port);
  const veth = vethName(port);
  const { host, env } = jailAddresses(port);
  await ip(['netns', 'add', ns]);
  await ip(['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
  await run('sysctl', ['-qw', `net.ipv6.conf.${veth}.disable_ipv6=1`]).catch(() => undefined);
  await ip(['addr', 'add', `${host}/30`, 'dev', veth]);
  await ip(['link', 'set', veth, 'up']);
  const inNs = (file: string, args: string[]) => run('nsenter', [`--net=/run/netns/${ns}`, '--', file, ...args]);
  await inNs('sysctl', ['-qw', 'net.ipv6.conf.all.disable_ipv6=1', 'net.ipv6.conf.default.disable_ipv6=1']).catch(() => undefined);
  await inNs('sysctl', ['-qw', 'net.ipv4.conf.all.route_localnet=1', 'net.ipv4.conf.eth0.route_localnet=1']);
  await ip(['-n', ns, 'addr', 'add', `${env}/30`, 'dev', 'eth0']);
  await ip(['-n', ns, 'link', 'set', 'lo', 'up']);
  await ip(['-n', ns, 'link', 'set', 'eth0', 'up']);
  await ip(['-n', ns, 'route', 'add', 'default', 'via', host]);
  // The web process may listen on 127.0.0.1: what the host sends to the env address goes there.
  await nft(
    `table ip vc_env {}\nflush table ip vc_env\ntable ip vc_env {\n  chain prerouting {\n    type nat hook prerouting priority dstnat; policy accept;\n    iifname "eth0" meta l4proto tcp dnat to 127.0.0.1\n  }\n}\n`,
    ns,
  );
}

/** Removes the namespace and the host end of the veth pair (absent ones are fine). */
export async function removeNetwork(port: number): Promise<void> {
  await run('ip', ['netns', 'delete', netnsName(port)]).catch(() => undefined);
  await run('ip', ['link', 'delete', vethName(port)]).catch(() => undefined);
}

async function ip(args: string[]): Promise<void> {
  try {
    await run('ip', args);
  } catch (err) {
    throw new Error(`ip ${args.join(' ')} failed: ${String((err as { stderr?: string }).stderr ?? (err as Error).message).trim()}`);
  }
}

function nft(rules: string, netns?: string): Promise<void> {
  const [file, args] = netns ? ['nsenter', [`--net=/run/netns/${netns}`, '--', 'nft', '-f', '-']] : ['nft', ['-f', '-']];
  return new Promise((resolve, reject) => {
    const child = execFile(file, args, (err, _out, stderr) =>
      err ? reject(new Error(`nft failed: ${String(stderr || err.message).trim()}`)) : resolve(),
    );
    child.stdin?.end(rules);
  });
}

// ------------------------------------------------------------------------------------------------------
// Running a command in it

/**
 * How to spawn `/bin/sh -c command` for the environment, in `cwd` (which, like HOME, it may write), with
 * exactly `env` (nothing of the worker's own environment).
 */
export function launch(jail: Jail, command: string, o: { cwd: string; env: Record<string, string | undefined> }): Launch {
  const env = { ...o.env, HOME: jail.home };
  if (jail.mode === 'none' || jail.uid === null || jail.gid === null) {
    return { file: '/bin/sh', args: ['-c', command], cwd: o.cwd, env };
  }
  if (jail.mode === 'uid') {
    return { file: '/bin/sh', args: ['-c', command], cwd: o.cwd, env, uid: jail.uid, gid: jail.gid };
  }
  const writable = [...new Set([jail.home, path.resolve(o.cwd)])];
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
    '--unshare-cgroup-try',
    '--hostname',
    'app',
    '--die-with-parent',
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
    ...writable.flatMap((d) => ['--bind', d, d]),
    '--chdir',
    path.resolve(o.cwd),
    '--',
    '/bin/sh',
    '-c',
    command,
  ];
  return { file: 'nsenter', args, cwd: o.cwd, env };
}

/** The read-only system a sandbox sees: /usr, /etc, /opt, /sys and the merged-/usr links (or directories). */
function systemMounts(): string[] {
  const out: string[] = ['--ro-bind', '/usr', '/usr', '--ro-bind', '/etc', '/etc', '--ro-bind-try', '/opt', '/opt', '--ro-bind-try', '/sys', '/sys'];
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

/** Hands the tree (a fresh checkout) to the environment's uid; symlinks are not followed. */
export async function giveTree(jail: Jail, dir: string): Promise<void> {
  if (jail.uid === null || jail.gid === null) return;
  await run('chown', ['-R', '-P', `${jail.uid}:${jail.gid}`, '--', dir]);
  await chmod(dir, 0o700);
}

function ipv4(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

export function safeSegment(value: string, what: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(value)) throw new Error(`invalid ${what}: ${JSON.stringify(value)}`);
  return value;
}

/** Removes the networks of every port in from-to (a test file's environments, when it ends). */
export async function removeNetworksInRange(from: number, to: number): Promise<void> {
  let names: string[] = [];
  try {
    names = readdirSync('/run/netns');
  } catch {
    return;
  }
  for (const name of names) {
    const port = Number(/^vc-(\d+)$/.exec(name)?.[1]);
    if (port >= from && port <= to) await removeNetwork(port);
  }
}
