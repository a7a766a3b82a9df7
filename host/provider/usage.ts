/**
 * What an environment's processes use on this host, for the resource sampler (activities/machines/sampler.ts):
 * CPU time and memory from its cgroup (cgroups.ts: usage is hierarchical, so every web process, build and
 * deploy step counts), or, without cgroups, from /proc for the live web process group; disk from `du`.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { promisify } from 'node:util';
import { environmentUsage, sweep } from './cgroups';

const run = promisify(execFile);
const CLOCK_TICKS = 100; // USER_HZ on Linux
const PAGE = 4096;

export interface Usage {
  memoryBytes: number;
  /** CPU time used since the environment's cgroup (or its web process group) began, in nanoseconds. */
  cpuNs: number;
}

/** The environment's usage now: its cgroup's (leaves whose processes are gone swept first), else /proc's. */
export function processUsage(envId: string, webPgid: number | null): Usage {
  sweep(envId);
  return environmentUsage(envId) ?? procUsage(webPgid);
}

/**
 * Bytes under each of `dirs`, and only those whose `content` is asked when they hold something (`du -sb`, which
 * counts a hard-linked file once): 0 for one that does not exist, or (`content`) is empty, where du would count the
 * empty directory's own block. One du for all of them: a spawn forks the worker, a large process (docs/benchmarks.md
 * "Spawns from a large process"), and the sampler measured two directories of every environment each round. A file
 * with links in two of them is counted in the first only.
 */
export async function diskBytesOf(dirs: Array<{ dir: string; content?: boolean }>): Promise<Map<string, number>> {
  const bytes = new Map<string, number>();
  const measured = new Set<string>();
  for (const { dir, content } of dirs) {
    bytes.set(dir, 0);
    if (!existsSync(dir)) continue;
    if (content && (await readdir(dir).catch(() => [])).length === 0) continue;
    measured.add(dir);
  }
  if (measured.size === 0) return bytes;
  let out: string;
  try {
    out = (await run('du', ['-sb0', '--', ...measured], { timeout: 30_000, maxBuffer: 16 * 1024 * 1024 })).stdout;
  } catch (err) {
    // du prints what it counted even when a file vanished under it
    out = (err as { stdout?: string }).stdout ?? '';
  }
  for (const entry of out.split('\0')) {
    const tab = entry.indexOf('\t');
    if (tab > 0) bytes.set(entry.slice(tab + 1), Number(entry.slice(0, tab)) || 0);
  }
  return bytes;
}

/** A process's fields of /proc/<pid>/stat after its name: its state at [0], its group at [2], utime [11], stime [12]. */
function statFields(pid: number | string): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** CPU time (user + system, nanoseconds) a process has used so far, from /proc (in clock ticks: 10 ms steps). */
export function processCpuNs(pid: number | string): number {
  const f = statFields(pid);
  return ((Number(f[11]) + Number(f[12])) / CLOCK_TICKS) * 1e9;
}

/** Without cgroups: the live web process group's resident memory and CPU time, from /proc. */
function procUsage(pgid: number | null): Usage {
  if (!pgid) return { memoryBytes: 0, cpuNs: 0 };
  let memoryBytes = 0;
  let ticks = 0;
  for (const entry of safeReaddir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const f = statFields(entry);
      if (Number(f[2]) !== pgid) continue;
      ticks += Number(f[11]) + Number(f[12]);
      memoryBytes += Number(readFileSync(`/proc/${entry}/statm`, 'utf8').split(' ')[1]) * PAGE;
    } catch {
      // gone meanwhile
    }
  }
  return { memoryBytes, cpuNs: (ticks / CLOCK_TICKS) * 1e9 };
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
