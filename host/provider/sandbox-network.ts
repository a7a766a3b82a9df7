/**
 * The network half of the sandbox (sandbox.ts): per environment a network namespace `vc-<tag>-<port>` joined
 * to the host by a veth pair (`v<tag>-<port>` on the host, `eth0` inside) on its own /30 of the host's
 * SANDBOX_NETWORK (default 10.200.0.0/14), and one firewall for all of this host's (nft tables
 * `inet vc_sandbox_<tag>` and `ip vc_sandbox_nat_<tag>`): from a veth nothing reaches the host itself (its
 * loopback services, its other addresses), another environment, or a private, link-local or loopback address,
 * except the IPv4 resolvers of /etc/resolv.conf on port 53; everything else is masqueraded out. `<tag>` names
 * the host (host-identity.ts), so that agents of several hosts on one kernel never touch each other's objects.
 * The one host port an environment does reach is the database services server's: TCP to its gateway (the host
 * side of its veth) on that port is DNATed to the server's address as this host sees it, SERVICES_HOST (default
 * 127.0.0.1: route_localnet on the host-side veth; another machine's address: a forward exception for exactly
 * that address and port; table `ip vc_services_<tag>`); that server demands a password (host/pg-server.ts).
 * Connections to this host's instance ports are DNATed the other way (instance-ports.ts) and let through. Inside, TCP arriving on eth0 goes to 127.0.0.1 (route_localnet), so a web process bound
 * to 127.0.0.1 or to every address is reached at `<env address>:PORT`. Everything is idempotent.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { promisify } from 'node:util';
import { type ExecInputError, execWithInput, nft } from './exec-input';
import { hostIdentity } from './host-identity';
import { OneAtATime } from '../per-key';

const run = promisify(execFile);

/** This host's sandboxes' block (SANDBOX_NETWORK): a services server's pg_hba.conf lets it in (with a password). */
function sandboxNetworkCidr(): string {
  return hostIdentity().network.cidr;
}
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

/** Host side and environment side of the environment's /30. */
export function jailAddresses(port: number): { host: string; env: string } {
  const base = hostIdentity().network.base + port * 4;
  return { host: ipv4(base + 1), env: ipv4(base + 2) };
}

export function netnsName(port: number): string {
  return `vc-${hostIdentity().tag}-${port}`;
}

/** The host end of the veth pair: `v<tag>-<port>`, at most 13 characters (Linux allows 15). */
export function vethName(port: number): string {
  return `${vethPrefix()}${port}`;
}

/** What every veth of this host's sandboxes starts with (nft matches `<prefix>*`). */
function vethPrefix(): string {
  return `v${hostIdentity().tag}-`;
}

/** This host's nft tables: `vc_sandbox_<tag>`, `vc_sandbox_nat_<tag>`, `vc_services_<tag>`. */
function tables(): { filter: string; nat: string; services: string } {
  const { tag } = hostIdentity();
  return { filter: `vc_sandbox_${tag}`, nat: `vc_sandbox_nat_${tag}`, services: `vc_services_${tag}` };
}

let hostNetwork: Promise<void> | null = null;
let servicesPorts: { open: number | null; close: number | null; target: string } = {
  open: null,
  close: null,
  target: '127.0.0.1',
};

/** Whether the services DNAT's target is this host's loopback (let in by the input chain) or another machine's. */
const onLoopback = (address: string) => address.startsWith('127.');

/**
 * The loopback port of the services server environments may reach at their gateway (`open`), and one that
 * must not be (`close`: a server found to trust without a password). The ports are elements of a set in a
 * table of its own, `ip vc_services_<tag>`, never flushed, so workers of one host (test files) do not close
 * each other's; `closeServicesPort` takes one out when its server goes away.
 */
export function setServicesPorts(ports: { open: number | null; close: number | null; target?: string }): void {
  const next = { ...ports, target: ports.target ?? '127.0.0.1' };
  if (next.open !== servicesPorts.open || next.close !== servicesPorts.close || next.target !== servicesPorts.target)
    hostNetwork = null;
  servicesPorts = next;
}

/** Takes a services port out of the set (its server stopped: the port may be reused by anything). */
export async function closeServicesPort(port: number): Promise<void> {
  const t = tables().services;
  await nft(`${servicesTable()}add element ip ${t} ports { ${port} }\ndelete element ip ${t} ports { ${port} }\n`);
}

/**
 * ip_forward, and this host's nft tables every one of its environments' veths is filtered and masqueraded by
 * (atomic, idempotent; another host's tables on the same kernel are left alone).
 */
export function ensureHostNetwork(): Promise<void> {
  hostNetwork ??= (async () => {
    const resolvers = readResolvers();
    const t = tables();
    const v = `${vethPrefix()}*`;
    const { target, open } = servicesPorts;
    // the services server on another machine: exactly its address and port are let through, once DNATed there
    const servicesOut =
      open && !onLoopback(target)
        ? `    iifname "${v}" ip daddr ${target} tcp dport ${open} ct status dnat accept\n`
        : '';
    const rules = `
table inet ${t.filter} {}
flush table inet ${t.filter}
table inet ${t.filter} {
  chain input {
    type filter hook input priority filter - 10; policy accept;
    iifname "${v}" ct state established,related accept
    iifname "${v}" ip daddr ${onLoopback(target) ? target : '127.0.0.1'} ct status dnat accept
${servicesOut}    iifname "${v}" drop
  }
  chain forward {
    type filter hook forward priority filter - 10; policy accept;
    iifname "${v}" oifname "${v}" drop
    oifname "${v}" ct state established,related accept
    oifname "${v}" ct status dnat accept
    oifname "${v}" drop
    iifname "${v}" ct state established,related accept
    iifname "${v}" meta nfproto ipv6 drop
${resolvers.length ? `    iifname "${v}" ip daddr { ${resolvers.join(', ')} } meta l4proto { tcp, udp } th dport 53 accept\n` : ''}${servicesOut}    iifname "${v}" ip daddr { ${PRIVATE_RANGES.join(', ')} } drop
    iifname "${v}" accept
  }
}
table ip ${t.nat} {}
flush table ip ${t.nat}
table ip ${t.nat} {
  chain postrouting {
    type nat hook postrouting priority srcnat; policy accept;
    ip saddr ${sandboxNetworkCidr()} oifname != "${v}" masquerade
  }
}
`;
    await nft(rules);
    await nft(servicesRules(servicesPorts));
    await run('sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
  })();
  hostNetwork.catch(() => {
    hostNetwork = null;
  });
  return hostNetwork;
}

/**
 * The only DNAT from a veth out of the sandbox: the services ports, from this host's block, to the services
 * server's address as this host sees it (SERVICES_HOST; default 127.0.0.1, which the input chain lets exactly
 * those in; another address: the forward chain lets exactly it and its port through, and the input chain too
 * when it is one of this host's own). Each host has its own table, so every host's block is let through.
 */
function servicesTable(): string {
  const t = tables().services;
  return `add table ip ${t}
add set ip ${t} ports { type inet_service; }
add chain ip ${t} prerouting { type nat hook prerouting priority dstnat; policy accept; }
flush chain ip ${t} prerouting
add rule ip ${t} prerouting iifname "${vethPrefix()}*" ip daddr ${sandboxNetworkCidr()} tcp dport @ports dnat to ${servicesPorts.target}
`;
}

function servicesRules(ports: { open: number | null; close: number | null }): string {
  const t = tables().services;
  let rules = servicesTable();
  if (ports.close)
    rules += `add element ip ${t} ports { ${ports.close} }\ndelete element ip ${t} ports { ${ports.close} }\n`;
  if (ports.open) rules += `add element ip ${t} ports { ${ports.open} }\n`;
  return rules;
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

const networks = new OneAtATime();

/** The environment's namespace and veth pair, as they should be; a half-made one is made again. */
export function ensureNetwork(port: number): Promise<void> {
  return networks.run(port, async () => {
    if (await networkReady(port)) return;
    // a half-made one goes first (nothing there: nothing to spawn for)
    if (existsSync(`/run/netns/${netnsName(port)}`) || existsSync(`/sys/class/net/${vethName(port)}`))
      await removeNetwork(port);
    try {
      await createNetwork(port);
    } catch (err) {
      // another worker process made it meanwhile
      if (await networkReady(port)) return;
      throw err;
    }
  });
}

async function networkReady(port: number): Promise<boolean> {
  const ns = netnsName(port);
  const { host, env } = jailAddresses(port);
  const seen = networkIdentity(port);
  if (!seen || !routeLocalnet(vethName(port))) return false;
  // Checked already, and the very same namespace and veth are still there (a namespace or veth made again has
  // another inode or ifindex): no `ip` to spawn, which every step of every task touching the environment paid.
  if (checkedNetworks.get(port) === seen) return true;
  const outside = await run('ip', ['-4', '-o', 'addr', 'show', 'dev', vethName(port)]).catch(() => null);
  const inside = await run('ip', ['-n', ns, '-4', '-o', 'addr', 'show', 'dev', 'eth0']).catch(() => null);
  const ready = Boolean(outside?.stdout.includes(`${host}/30`) && inside?.stdout.includes(`${env}/30`));
  if (ready) checkedNetworks.set(port, seen);
  return ready;
}

/** Per port, the namespace and veth (networkIdentity) whose addresses this process has seen right. */
const checkedNetworks = new Map<number, string>();

/** The environment's namespace file's inode and its host-side veth's ifindex; null when either is missing. */
function networkIdentity(port: number): string | null {
  try {
    const ino = statSync(`/run/netns/${netnsName(port)}`).ino;
    const ifindex = readFileSync(`/sys/class/net/${vethName(port)}/ifindex`, 'utf8').trim();
    return `${ino}:${ifindex}`;
  } catch {
    return null;
  }
}

/** The host-side veth lets DNATed packets to 127.0.0.1 (the services server) in, and their replies out. */
function routeLocalnet(veth: string): boolean {
  try {
    return readFileSync(`/proc/sys/net/ipv4/conf/${veth}/route_localnet`, 'utf8').trim() === '1';
  } catch {
    return false;
  }
}

/**
 * The steps that make an environment's network, as one shell script (`sh -e`, each step traced): one process
 * spawned by the worker instead of one per step. The worker is a large process, and every spawn forks it: ~13
 * steps took ~250 ms of its event loop and ~120 ms of its CPU at 700 MB (docs/benchmarks.md, "Spawns from a large
 * process"); the shell's own forks are cheap. The names and addresses come as arguments ($1..$4), the namespace's
 * nft rules on standard input. Steps that a kernel without IPv6 refuses may fail (`|| true`).
 */
const CREATE_NETWORK = `ns=$1 veth=$2 host=$3 env=$4
ip netns add "$ns"
ip link add "$veth" type veth peer name eth0 netns "$ns"
sysctl -qw "net.ipv6.conf.$veth.disable_ipv6=1" || true
sysctl -qw "net.ipv4.conf.$veth.route_localnet=1"
ip addr add "$host/30" dev "$veth"
ip link set "$veth" up
nsenter --net="/run/netns/$ns" -- sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 || true
nsenter --net="/run/netns/$ns" -- sysctl -qw net.ipv4.conf.all.route_localnet=1 net.ipv4.conf.eth0.route_localnet=1
ip -n "$ns" addr add "$env/30" dev eth0
ip -n "$ns" link set lo up
ip -n "$ns" link set eth0 up
ip -n "$ns" route add default via "$host"
nsenter --net="/run/netns/$ns" -- nft -f -
`;

/** The web process may listen on 127.0.0.1: what the host sends to the env address goes there. */
const NAMESPACE_NFT = `table ip vc_env {}\nflush table ip vc_env\ntable ip vc_env {\n  chain prerouting {\n    type nat hook prerouting priority dstnat; policy accept;\n    iifname "eth0" meta l4proto tcp dnat to 127.0.0.1\n  }\n}\n`;

async function createNetwork(port: number): Promise<void> {
  const ns = netnsName(port);
  const veth = vethName(port);
  const { host, env } = jailAddresses(port);
  await removeLegacyNetwork(port, host);
  await script(CREATE_NETWORK, [ns, veth, host, env], NAMESPACE_NFT).catch((err: Error) => {
    throw new Error(`could not make the network of port ${port}: ${err.message}`);
  });
}

/**
 * Runs `text` with `sh -ex` (arguments as $1...; `input` on its standard input). A failure names the step that
 * failed (the trace's last command) and what it said.
 */
async function script(text: string, args: string[], input = ''): Promise<void> {
  await execWithInput('sh', ['-exc', text, 'sh', ...args], input).catch((err: ExecInputError) => {
    const lines = err.stderr.trim().split('\n');
    let at = -1;
    for (let i = lines.length - 1; i >= 0 && at < 0; i--) if (lines[i].startsWith('+ ')) at = i;
    const step = at >= 0 ? lines[at].slice(2) : '';
    const said = (at >= 0 ? lines.slice(at + 1) : lines).join(' ').trim() || err.message;
    throw new Error(step ? `${step} failed: ${said}` : said);
  });
}

/**
 * The network a worker of before host-named objects made for the port (`vc-<port>`, `vch<port>`), when it holds
 * the address this host's is about to take: two veths with one /30 would route the edge to the old one. Removed
 * once, on the first start after the upgrade (the previous worker's instances lose it as theirs are replaced).
 */
async function removeLegacyNetwork(port: number, host: string): Promise<void> {
  if (!existsSync(`/run/netns/vc-${port}`)) return;
  const legacy = await run('ip', ['-4', '-o', 'addr', 'show', 'dev', `vch${port}`]).catch(() => null);
  if (!legacy?.stdout.includes(`${host}/30`)) return;
  await run('ip', ['netns', 'delete', `vc-${port}`]).catch(() => undefined);
  await run('ip', ['link', 'delete', `vch${port}`]).catch(() => undefined);
}

/** Removes the namespace and the host end of the veth pair (absent ones are fine). */
export async function removeNetwork(port: number): Promise<void> {
  checkedNetworks.delete(port);
  // one spawn for both (script above); either may be gone already
  await script('ip netns delete "$1" 2>/dev/null || true; ip link delete "$2" 2>/dev/null || true', [
    netnsName(port),
    vethName(port),
  ]).catch(() => undefined);
}

function ipv4(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

/** Removes this host's networks of every port in from-to (a test file's environments, when it ends). */
export async function removeNetworksInRange(from: number, to: number): Promise<void> {
  let names: string[] = [];
  try {
    names = readdirSync('/run/netns');
  } catch {
    return;
  }
  const own = `vc-${hostIdentity().tag}-`;
  for (const name of names) {
    const port = name.startsWith(own) ? Number(/^(\d+)$/.exec(name.slice(own.length))?.[1]) : Number.NaN;
    if (port >= from && port <= to) await removeNetwork(port);
  }
}
