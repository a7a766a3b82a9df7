/**
 * Holding an environment's processes to their server's plan with Linux control groups.
 *
 * Layout (under the worker's OWN cgroup of each controller, as a delegated subtree: the worker never moves
 * processes out of the hierarchy it was started in; the subtree is named after the host, `vc-console-<HOST_NAME>`
 * (host-identity.ts), so that two agents started from one cgroup never see each other's processes):
 *   <own>/vc-console-<host>/<envId>/        one per environment: what the resource sampler reads (usage is
 *                                           hierarchical), never limited itself
 *   <own>/vc-console-<host>/<envId>/<role>-<pid>   one per spawned process tree (a web instance, a build or deploy
 *                                           step), limited to the plan of the server it runs on
 * One leaf per process tree rather than one per server: while an instance is replaced (deploy, resize,
 * reboot) the new one starts before the old one stops, and each must have the whole plan to itself.
 * Leaves whose processes are gone are removed on the next placement, sample or retire.
 *
 * cgroup v1 (this host: memory, cpu, cpuacct and pids hierarchies): memory.limit_in_bytes (and memsw where
 * swap is accounted), cpu.cfs_quota_us over a 100 ms period, pids.max (the plan's max_processes), usage from
 * memory.usage_in_bytes and cpuacct.usage.
 * cgroup v2: memory.max, memory.swap.max, cpu.max, pids.max, usage from memory.current and cpu.stat; the controllers
 * must be enabled in the worker's cgroup (it fails where the worker's cgroup holds other processes, the
 * "no internal processes" rule: then limits are off and `cgroupHost().reason` says why).
 * Without writable cgroups (not root, not Linux) processes run unlimited and only VC_CPU/VC_MEMORY_MB say
 * the plan; the sampler falls back to /proc.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { defaultMaxProcesses } from '../../db/queries/machines';
import { cgroupSubtree } from './host-identity';

export interface Limits {
  /** CPUs (may be fractional: 0.5 is half of one core). */
  cpu: number;
  memoryMb: number;
  /** pids.max of each process tree (processes and threads); default: the plan's memory's (defaultMaxProcesses). */
  maxProcesses?: number;
}

/** The pids limit a process tree held to `limits` gets. */
function processLimit(limits: Limits): number {
  return limits.maxProcesses ?? defaultMaxProcesses(limits.memoryMb);
}

type CgroupHost =
  | { kind: 'v1'; memory: string; cpu: string; cpuacct: string; pids: string | null }
  | { kind: 'v2'; dir: string; pids: boolean }
  | { kind: 'none'; reason: string };

/** What a process is told about its plan. */
export function limitEnv(limits: Limits): { VC_CPU: string; VC_MEMORY_MB: string } {
  return { VC_CPU: String(limits.cpu), VC_MEMORY_MB: String(limits.memoryMb) };
}

const CFS_PERIOD_US = 100_000;
let detected: { subtree: string; host: CgroupHost } | undefined;

/** Where this worker keeps its cgroups, detected once for its host's subtree (see the file comment). */
export function cgroupHost(): CgroupHost {
  const subtree = cgroupSubtree();
  if (detected?.subtree !== subtree) detected = { subtree, host: detect(subtree) };
  return detected.host;
}

function detect(subtree: string): CgroupHost {
  if (process.platform !== 'linux') return { kind: 'none', reason: 'not Linux' };
  if (process.getuid?.() !== 0) return { kind: 'none', reason: 'the worker does not run as root' };
  let mountinfo: string;
  let own: string;
  try {
    mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
    own = readFileSync('/proc/self/cgroup', 'utf8');
  } catch (err) {
    return { kind: 'none', reason: `cannot read /proc: ${(err as Error).message}` };
  }
  const mounts = mountinfo
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [pre, post] = line.split(' - ');
      const f = pre.split(' ');
      const [fstype, , superOpts] = (post ?? '').split(' ');
      return { root: f[3], point: f[4], fstype, options: (superOpts ?? '').split(',') };
    });
  const ownPaths = own
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [, controllers, p] = line.split(':');
      return {
        controllers: controllers.split(','),
        path: line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1) || p,
      };
    });
  const v1Dir = (controller: string): string | null => {
    const m = mounts.find((x) => x.fstype === 'cgroup' && x.options.includes(controller));
    const mine = ownPaths.find((x) => x.controllers.includes(controller));
    if (!m || !mine) return null;
    return path.join(m.point, relativeTo(mine.path, m.root), subtree);
  };
  const memory = v1Dir('memory');
  const cpu = v1Dir('cpu');
  const cpuacct = v1Dir('cpuacct');
  if (memory && cpu && cpuacct) return usable({ kind: 'v1', memory, cpu, cpuacct, pids: v1Dir('pids') });

  const v2 = mounts.find((x) => x.fstype === 'cgroup2');
  const mine = ownPaths.find((x) => x.controllers.length === 1 && x.controllers[0] === '');
  if (v2 && mine) {
    const ownDir = path.join(v2.point, relativeTo(mine.path, v2.root));
    try {
      const available = readFileSync(path.join(ownDir, 'cgroup.controllers'), 'utf8').split(/\s+/);
      if (!available.includes('memory') || !available.includes('cpu')) {
        return { kind: 'none', reason: `cgroup v2 without the memory and cpu controllers at ${ownDir}` };
      }
      const pids = available.includes('pids');
      const controllers = pids ? '+memory +cpu +pids' : '+memory +cpu';
      writeFileSync(path.join(ownDir, 'cgroup.subtree_control'), controllers);
      const dir = path.join(ownDir, subtree);
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'cgroup.subtree_control'), controllers);
      return { kind: 'v2', dir, pids };
    } catch (err) {
      return {
        kind: 'none',
        reason: `cgroup v2 controllers cannot be delegated at ${ownDir}: ${(err as Error).message}`,
      };
    }
  }
  return { kind: 'none', reason: 'no cgroup v1 memory/cpu/cpuacct hierarchies and no cgroup v2 mount' };
}

function v1Bases(h: CgroupHost & { kind: 'v1' }): string[] {
  return h.pids ? [h.memory, h.cpu, h.cpuacct, h.pids] : [h.memory, h.cpu, h.cpuacct];
}

function relativeTo(p: string, root: string): string {
  if (root === '/' || !p.startsWith(root)) return p;
  return p.slice(root.length) || '/';
}

/** A v1 host whose directories cannot be created is no host for limits (nor for pids, without its own). */
function usable(h: CgroupHost & { kind: 'v1' }): CgroupHost {
  try {
    for (const dir of [h.memory, h.cpu, h.cpuacct]) mkdirSync(dir, { recursive: true });
    if (h.pids) {
      try {
        mkdirSync(h.pids, { recursive: true });
      } catch {
        return { ...h, pids: null };
      }
    }
    return h;
  } catch (err) {
    return { kind: 'none', reason: `cgroup v1 directories are not writable: ${(err as Error).message}` };
  }
}

/** The environment's directories, one per controller hierarchy (memory, cpu, cpuacct[, pids]; one for v2). */
function envDirs(h: CgroupHost, envId: string): string[] {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(envId))
    throw new Error(`invalid environment id ${JSON.stringify(envId)}`);
  if (h.kind === 'v1') return v1Bases(h).map((d) => path.join(d, envId));
  if (h.kind === 'v2') return [path.join(h.dir, envId)];
  return [];
}

interface Placement {
  /** The leaf directories the process tree was placed in. */
  dirs: string[];
  pids: number[];
}

/**
 * Places `pid` and every process it has already started into a new leaf cgroup of the environment, limited
 * to `limits`. Synchronous, so that it runs right after spawn, before the child gets far: what the child
 * started since is found through /proc and moved too; what starts later inherits the leaf. A process runs
 * unheld for the first moment (about a millisecond: spawn to placement), so a command that is over within
 * that moment may finish outside; anything that lives longer is held. Returns null when the host has no
 * usable cgroups; a failure to place is thrown (the caller decides whether that is fatal).
 * A sandboxed process (sandbox.ts) is `nsenter`, which becomes `bwrap`: its children (the sandbox's init and
 * the tenant's command, in their own pid namespace) inherit the leaf or are moved by their host pids.
 */
export function holdProcess(envId: string, role: string, pid: number, limits: Limits): Placement | null {
  const h = cgroupHost();
  if (h.kind === 'none') return null;
  sweep(envId);
  const leaf = `${role.replace(/[^a-z0-9-]/gi, '-')}-${pid}`;
  const parents = envDirs(h, envId);
  const dirs = parents.map((p) => path.join(p, leaf));
  for (const p of parents) {
    mkdirSync(p, { recursive: true });
    if (h.kind === 'v2')
      tryWrite(path.join(p, 'cgroup.subtree_control'), h.pids ? '+memory +cpu +pids' : '+memory +cpu');
  }
  for (const d of dirs) mkdirSync(d, { recursive: true });
  const bytes = Math.round(limits.memoryMb * 1024 * 1024);
  const quota = Math.max(1000, Math.round(limits.cpu * CFS_PERIOD_US));
  if (h.kind === 'v1') {
    const [memory, cpu] = dirs;
    tryWrite(path.join(memory, 'memory.move_charge_at_immigrate'), '3'); // deprecated on new kernels: best effort
    writeFileSync(path.join(memory, 'memory.limit_in_bytes'), String(bytes));
    tryWrite(path.join(memory, 'memory.memsw.limit_in_bytes'), String(bytes)); // only where swap is accounted
    tryWrite(path.join(memory, 'memory.swappiness'), '0');
    writeFileSync(path.join(cpu, 'cpu.cfs_period_us'), String(CFS_PERIOD_US));
    writeFileSync(path.join(cpu, 'cpu.cfs_quota_us'), String(quota));
    // A fork bomb is held to the plan's max_processes: fork and clone fail past it (EAGAIN).
    if (h.pids) writeFileSync(path.join(dirs[3], 'pids.max'), String(processLimit(limits)));
  } else {
    const [dir] = dirs;
    writeFileSync(path.join(dir, 'memory.max'), String(bytes));
    tryWrite(path.join(dir, 'memory.swap.max'), '0');
    writeFileSync(path.join(dir, 'cpu.max'), `${quota} ${CFS_PERIOD_US}`);
    if (h.pids) writeFileSync(path.join(dir, 'pids.max'), String(processLimit(limits)));
  }
  // The pid first: whatever it starts from now on is born inside. Then what it started before, until a scan
  // finds nothing new (a child may have forked again between the scan and its own move).
  const placed = new Set<number>();
  const place = (p: number) => {
    for (const d of dirs) {
      try {
        writeFileSync(path.join(d, 'cgroup.procs'), String(p));
      } catch (err) {
        // a process that exited meanwhile is not an error; the first pid must be placed
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH' || p === pid) throw err;
      }
    }
    placed.add(p);
  };
  place(pid);
  for (let round = 0; round < 5; round++) {
    const fresh = descendants(pid).filter((p) => !placed.has(p));
    if (fresh.length === 0) break;
    fresh.forEach(place);
  }
  const pids = [...placed];
  return { dirs, pids };
}

/**
 * The host pids in the environment's `role` leaves (`<role>-<pid>`, holdProcess) whose leaf pid is none of
 * `keep`: what runs there beside the instances a supervisor knows, such as one a worker killed in the middle
 * of a restart had started and recorded nowhere.
 */
export function strayProcesses(envId: string, role: string, keep: number[]): number[] {
  const [dir] = envDirs(cgroupHost(), envId); // v1: the memory hierarchy, which holds every process
  if (!dir) return [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const name of names) {
    const leaf = /^(.+)-(\d+)$/.exec(name);
    if (!leaf || leaf[1] !== role || keep.includes(Number(leaf[2]))) continue;
    try {
      const procs = readFileSync(path.join(dir, name, 'cgroup.procs'), 'utf8');
      pids.push(...procs.split('\n').filter(Boolean).map(Number));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Removes the environment's leaves whose processes are gone (rmdir of a busy cgroup fails: it is kept). */
export function sweep(envId: string): void {
  const h = cgroupHost();
  for (const parent of envDirs(h, envId)) {
    let names: string[];
    try {
      names = readdirSync(parent, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      continue;
    }
    for (const name of names) {
      try {
        rmdirSync(path.join(parent, name));
      } catch {
        // still has processes
      }
    }
  }
}

/**
 * Takes the environment's cgroups away once nothing runs in them (environment retired, worker stopped). A
 * process just killed may still be leaving its cgroup: busy directories are tried again for up to a second.
 */
export async function removeEnvironmentCgroups(envId: string): Promise<void> {
  const dirs = envDirs(cgroupHost(), envId);
  for (let attempt = 0; attempt < 20; attempt++) {
    sweep(envId);
    let busy = false;
    for (const dir of dirs) {
      try {
        rmdirSync(dir);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') busy = true;
      }
    }
    if (!busy) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Removes this worker's `vc-console-<host>` directories when no environment has cgroups left (worker stopped). */
export function removeCgroupBase(): void {
  const h = cgroupHost();
  const bases = h.kind === 'v1' ? v1Bases(h) : h.kind === 'v2' ? [h.dir] : [];
  for (const dir of bases) {
    try {
      rmdirSync(dir);
    } catch {
      // another worker's environments still live there
    }
  }
  detected = undefined; // created again on the next placement
}

interface CgroupUsage {
  memoryBytes: number;
  /** CPU time used by the environment's processes since its cgroup was created, in nanoseconds. */
  cpuNs: number;
}

/** What the environment's processes use now, or null when it has no cgroup (nothing ran, or no cgroups). */
export function environmentUsage(envId: string): CgroupUsage | null {
  const h = cgroupHost();
  const dirs = envDirs(h, envId);
  if (dirs.length === 0 || !existsSync(dirs[0])) return null;
  try {
    if (h.kind === 'v1') {
      const memoryBytes = Number(readFileSync(path.join(dirs[0], 'memory.usage_in_bytes'), 'utf8'));
      const cpuNs = Number(readFileSync(path.join(dirs[2], 'cpuacct.usage'), 'utf8'));
      return { memoryBytes, cpuNs };
    }
    const memoryBytes = Number(readFileSync(path.join(dirs[0], 'memory.current'), 'utf8'));
    const stat = readFileSync(path.join(dirs[0], 'cpu.stat'), 'utf8');
    const usec = Number(/usage_usec (\d+)/.exec(stat)?.[1] ?? 0);
    return { memoryBytes, cpuNs: usec * 1000 };
  } catch {
    return null;
  }
}

/** The pids of a process's living descendants, from /proc (children before grandchildren). */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(e));
      children.set(ppid, list);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const queue = [...(children.get(pid) ?? [])];
  while (queue.length > 0) {
    const p = queue.shift()!;
    out.push(p);
    queue.push(...(children.get(p) ?? []));
  }
  return out;
}

function tryWrite(file: string, value: string): void {
  try {
    writeFileSync(file, value);
  } catch {
    // optional knob
  }
}
