/**
 * Instance ports (issue 26 item 5, docs/hosts.md "The edge across hosts"): each web instance holds one port of
 * its host's INSTANCE_PORTS, and the edge reaches it at `HOST_ADDRESS:<instance port>`, never at a sandbox
 * address (which only this machine can route to).
 *
 * - With network namespaces, nothing listens on the instance port: the host forwards it into the sandbox with
 *   nft DNAT, in `prerouting` (connections from other machines) and `output` (from this machine: the edge of
 *   `npm start`, or another agent sharing the kernel), through one map `HOST_ADDRESS . port : sandbox address
 *   . internal port` in the table `ip vc_instances_<tag>`. A connection from this machine's loopback is SNATed
 *   (masqueraded) to the veth's host address as it leaves for the sandbox, so the app sees a sane source and its
 *   replies route back. The sandboxes' forward filter (sandbox-network.ts) lets DNATed connections in.
 * - Without namespaces (`uid`, `none`), the web process itself listens on its instance port (PORT): the edge
 *   reaches it when it listens on HOST_ADDRESS (or every address), as before on 127.0.0.1.
 *
 * Map elements are added and deleted one by one (the table and its chains are made idempotently, never
 * flushed of elements), so that workers of one host sharing the table (test files) never drop each other's.
 */
import { execFile } from 'node:child_process';
import { lookup } from 'node:dns/promises';
import { isIPv4 } from 'node:net';
import { promisify } from 'node:util';
import { nft } from './exec-input';
import { hostIdentity } from './host-identity';

const run = promisify(execFile);

/** Who hands out instance ports: the worker's is the `instance_ports` table (db/queries/instance-ports.ts). */
export interface InstancePortBook {
  /** A port no other instance of this host holds (nor one of `skip`), for the environment's slot. */
  take(envId: string, slot: number, skip: number[]): Promise<number>;
  release(port: number): Promise<void>;
}

/** A book kept in this process alone (a supervisor without a database: a test's provider). */
export function memoryInstancePorts(range: { from: number; to: number }): InstancePortBook {
  const held = new Set<number>();
  return {
    async take(_envId, _slot, skip) {
      for (let port = range.from; port <= range.to; port++) {
        if (held.has(port) || skip.includes(port)) continue;
        held.add(port);
        return port;
      }
      throw new Error(`every port of INSTANCE_PORTS (${range.from}-${range.to}) is held by an instance`);
    },
    async release(port) {
      held.delete(port);
    },
  };
}

/** Where the edge reaches this host's instances, and what hands out their ports. */
export interface InstanceExposure {
  /** HOST_ADDRESS as the edge is given it. */
  address: string;
  book: InstancePortBook;
}

const table = () => `vc_instances_${hostIdentity().tag}`;

/** Per table: a process whose host identity is configured again (a bench, a test) ensures the new host's table too. */
const ensured = new Map<string, Promise<void>>();

/** This host's table, map and chains (idempotent; the map's elements are kept). */
function ensureInstanceTable(): Promise<void> {
  const t = table();
  let made = ensured.get(t);
  if (made) return made;
  made = (async () => {
    await nft(`add table ip ${t}
add map ip ${t} forwards { type ipv4_addr . inet_service : ipv4_addr . inet_service; }
add chain ip ${t} prerouting { type nat hook prerouting priority dstnat; policy accept; }
add chain ip ${t} output { type nat hook output priority -100; policy accept; }
add chain ip ${t} postrouting { type nat hook postrouting priority srcnat; policy accept; }
flush chain ip ${t} prerouting
flush chain ip ${t} output
flush chain ip ${t} postrouting
add rule ip ${t} prerouting meta l4proto tcp dnat ip to ip daddr . tcp dport map @forwards
add rule ip ${t} output meta l4proto tcp dnat ip to ip daddr . tcp dport map @forwards
add rule ip ${t} postrouting oifname "v${hostIdentity().tag}-*" ip saddr 127.0.0.0/8 ct status dnat masquerade
`);
  })();
  ensured.set(t, made);
  made.catch(() => ensured.delete(t));
  return made;
}

const resolved = new Map<string, Promise<string>>();

/** HOST_ADDRESS as an IPv4 address (a host name is looked up once). */
function ipv4Of(address: string): Promise<string> {
  let found = resolved.get(address);
  if (!found) {
    found = isIPv4(address) ? Promise.resolve(address) : lookup(address, { family: 4 }).then((r) => r.address);
    resolved.set(address, found);
    found.catch(() => resolved.delete(address));
  }
  return found;
}

/** Forwards `address:port` to the instance at `to` (its sandbox address and internal port), replacing any forward of it. */
export async function forwardInstancePort(
  address: string,
  port: number,
  to: { host: string; port: number },
): Promise<void> {
  await ensureInstanceTable();
  const key = `${await ipv4Of(address)} . ${port}`;
  const add = `add element ip ${table()} forwards { ${key} : ${to.host} . ${to.port} }\n`;
  // Usually the port has no forward (or this very one): one nft run, ~50 ms of CPU on a VM where forks are dear.
  // A port forwarded elsewhere ("File exists"; nft 1.0.6 has no `destroy`) is replaced in one transaction, with no
  // moment without a forward.
  await nft(add).catch(() => nft(`delete element ip ${table()} forwards { ${key} }\n${add}`));
}

/** Takes the forward of `address:port` away (absent: nothing to do). */
export async function unforwardInstancePort(address: string, port: number): Promise<void> {
  await nft(`delete element ip ${table()} forwards { ${await ipv4Of(address)} . ${port} }\n`).catch(() => undefined);
}

/**
 * Takes away every forward of `address` on a port of `range` but `keep`: what instances no longer running left
 * (a worker's start), or all of them (a clean stop). Another host's, or another range's, are left alone.
 */
export async function pruneInstanceForwards(
  address: string,
  range: { from: number; to: number },
  keep: number[],
): Promise<number[]> {
  const ip = await ipv4Of(address);
  let listed: string;
  try {
    listed = (await run('nft', ['-j', 'list', 'map', 'ip', table(), 'forwards'])).stdout;
  } catch {
    return []; // no table yet: nothing forwarded
  }
  const ports: number[] = [];
  for (const item of (JSON.parse(listed).nftables ?? []) as { map?: { elem?: unknown[] } }[])
    for (const elem of item.map?.elem ?? []) {
      const [addr, port] = ((elem as [{ concat: [string, number] }])[0]?.concat ?? []) as [string, number];
      if (addr === ip && port >= range.from && port <= range.to && !keep.includes(port)) ports.push(port);
    }
  if (ports.length === 0) return ports;
  // one nft run for them all; should one be gone meanwhile (the transaction fails whole), one by one
  await nft(ports.map((port) => `delete element ip ${table()} forwards { ${ip} . ${port} }\n`).join('')).catch(
    async () => {
      for (const port of ports) await unforwardInstancePort(address, port);
    },
  );
  return ports;
}
