/**
 * The host agent's own settings (CONTRACT "Hosts", docs/hosts.md), parsed for system/config.ts:
 * HOST_ADDRESS, HOST_CAPACITY, INSTANCE_PORTS, HOST_LOST_SECONDS and HOST_GRACE_SECONDS. Each is checked at start, saying what is wrong.
 */
import { statfsSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, resolve } from 'node:path';

export interface HostConfig {
  /** Where the edge reaches this host's instances (HOST_ADDRESS, default 127.0.0.1). */
  hostAddress: string;
  /** What this host offers (HOST_CAPACITY; default: what the machine has). */
  hostCapacity: { cpu: number; memory_mb: number; disk_gb: number };
  /** Ports on HOST_ADDRESS where this host exposes its instances to the edge (INSTANCE_PORTS, default 30000-30999). */
  instancePorts: { from: number; to: number };
  /** A host whose heartbeat is older than this is `lost` (HOST_LOST_SECONDS, default 30). */
  hostLostSeconds: number;
  /**
   * How long work sent to a host waits beyond HOST_LOST_SECONDS for its agent to take it, before its task fails
   * `host_unavailable` (HOST_GRACE_SECONDS, default 30: CONTRACT "Hosts").
   */
  hostGraceSeconds: number;
}

/** What the machine has: its CPUs, its memory, and the size of the file system holding `dataDir`. */
function machineCapacity(dataDir: string): HostConfig['hostCapacity'] {
  let dir = resolve(dataDir);
  let diskGb = 0;
  for (;;) {
    try {
      const s = statfsSync(dir);
      diskGb = Math.floor((s.blocks * s.bsize) / 1024 ** 3);
      break;
    } catch {
      const up = dirname(dir);
      if (up === dir) break;
      dir = up; // DATA_DIR not made yet: the file system it will be on
    }
  }
  return { cpu: cpus().length || 1, memory_mb: Math.floor(totalmem() / 1024 ** 2), disk_gb: diskGb };
}

/** HOST_CAPACITY: `cpu=4,memory_mb=8192,disk_gb=100`; a key left out takes what the machine has. */
function parseHostCapacity(raw: string | undefined, dataDir: string): HostConfig['hostCapacity'] {
  const capacity = machineCapacity(dataDir);
  for (const part of (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^(cpu|memory_mb|disk_gb)=(\d+(\.\d+)?)$/.exec(part);
    if (!m || (m[1] !== 'cpu' && m[3]) || Number(m[2]) <= 0)
      throw new Error(
        `HOST_CAPACITY must look like cpu=4,memory_mb=8192,disk_gb=100 (positive numbers, whole but cpu), got "${raw}"`,
      );
    capacity[m[1] as keyof typeof capacity] = Number(m[2]);
  }
  return capacity;
}

/** INSTANCE_PORTS: `from-to`, within 1-65535. */
function parseInstancePorts(raw: string | undefined): HostConfig['instancePorts'] {
  const value = raw?.trim() || '30000-30999';
  const m = /^(\d+)-(\d+)$/.exec(value);
  const [from, to] = m ? [Number(m[1]), Number(m[2])] : [0, 0];
  if (!m || from < 1 || to > 65535 || from > to)
    throw new Error(`INSTANCE_PORTS must look like 30000-30999 (ports 1-65535), got "${raw}"`);
  return { from, to };
}

/** HOST_ADDRESS: an IPv4 address (or a host name the edge resolves). */
function parseHostAddress(raw: string | undefined): string {
  const value = raw?.trim() || '127.0.0.1';
  if (!/^[A-Za-z0-9][A-Za-z0-9.:-]*$/.test(value))
    throw new Error(`HOST_ADDRESS must be an address or host name, got "${raw}"`);
  return value;
}

export function loadHostConfig(env: NodeJS.ProcessEnv, dataDir: string): HostConfig {
  const lost = env.HOST_LOST_SECONDS?.trim() || '30';
  if (!/^\d+$/.test(lost) || Number(lost) < 1)
    throw new Error(`HOST_LOST_SECONDS must be a whole number of seconds, at least 1, got "${env.HOST_LOST_SECONDS}"`);
  const grace = env.HOST_GRACE_SECONDS?.trim() || '30';
  if (!/^\d+$/.test(grace) || Number(grace) < 1)
    throw new Error(
      `HOST_GRACE_SECONDS must be a whole number of seconds, at least 1, got "${env.HOST_GRACE_SECONDS}"`,
    );
  return {
    hostAddress: parseHostAddress(env.HOST_ADDRESS),
    hostCapacity: parseHostCapacity(env.HOST_CAPACITY, dataDir),
    instancePorts: parseInstancePorts(env.INSTANCE_PORTS),
    hostLostSeconds: Number(lost),
    hostGraceSeconds: Number(grace),
  };
}
