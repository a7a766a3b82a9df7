/**
 * Which host this process's provider is: every machine object it makes is named after it, so that several
 * agents (a move between two of them, tests) can share one kernel without touching each other's objects.
 *
 * - `name`: HOST_NAME (default: the machine's hostname).
 * - `tag`: the name as it fits in a network interface's 15 characters: the name itself when it is 1-6
 *   lowercase letters and digits, else 6 characters of its SHA-256 (base 36). Network namespaces are
 *   `vc-<tag>-<port>`, host-side veths `v<tag>-<port>` (at most 13 characters), nft tables
 *   `vc_sandbox_<tag>`, `vc_sandbox_nat_<tag>`, `vc_services_<tag>`.
 * - cgroups: the subtree `vc-console-<name>` under the worker's own cgroup (the name, any character but `/`
 *   and a leading dot replaced by `_`).
 * - `network`: SANDBOX_NETWORK (default 10.200.0.0/14), a /30 for each port 0-65535, so a /14 or larger.
 *
 * One process holds one host's provider: `configureHostIdentity` is called once by the worker (and by a test's
 * child process for another host) before any environment is set up.
 */
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { DEFAULT_SANDBOX_NETWORK, parseSandboxNetwork } from '../../system/config';

export interface HostIdentity {
  name: string;
  tag: string;
  /** The sandboxes' block: its first address as a number, and as written. */
  network: { base: number; cidr: string };
}

/** HOST_NAME's tag (see the file comment). */
export function hostTag(name: string): string {
  if (/^[a-z0-9]{1,6}$/.test(name)) return name;
  const n = BigInt(`0x${createHash('sha256').update(name).digest('hex').slice(0, 16)}`);
  return n.toString(36).padStart(6, '0').slice(-6);
}

function identityOf(o: { hostName?: string; sandboxNetwork?: string } = {}): HostIdentity {
  const name = o.hostName || hostname();
  return { name, tag: hostTag(name), network: parseSandboxNetwork(o.sandboxNetwork || DEFAULT_SANDBOX_NETWORK) };
}

let current: HostIdentity | null = null;

/** Sets this process's host (the worker, at start). Objects made before under another name are not renamed. */
export function configureHostIdentity(o: { hostName?: string; sandboxNetwork?: string }): HostIdentity {
  current = identityOf(o);
  return current;
}

/** This process's host: as configured, else the defaults (HOST_NAME and SANDBOX_NETWORK of the environment). */
export function hostIdentity(): HostIdentity {
  current ??= identityOf({ hostName: process.env.HOST_NAME, sandboxNetwork: process.env.SANDBOX_NETWORK });
  return current;
}

/** The cgroup subtree's name: `vc-console-<HOST_NAME>`. */
export function cgroupSubtree(identity: HostIdentity = hostIdentity()): string {
  return `vc-console-${identity.name.replace(/[/\s]|^\./g, '_')}`;
}
