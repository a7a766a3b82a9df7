import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { cgroupSubtree } from '../../host/provider/host-identity';
import { tenantUid } from '../../host/provider/sandbox';
import type { TestContext } from './context';
import { freePort } from './ports';
import { givenProcessBundles, nodeArgs } from '../../processes/process-bundles';

/**
 * The fields of /proc/<pid>/stat after the command name, which may itself hold spaces and parentheses (cut at
 * its last `)`): [0] is field 3 of proc(5), the state; [1] the parent's pid, [2] the process group, [16] the
 * niceness, [19] the start time.
 */
export function procStat(pid: number | string): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/**
 * The host's processes whose command line, environment or working directory mention `dir` (what a system
 * started with DATA_DIR=dir, and its tenants' processes working there), as `pid command`. Linux only.
 */
export function processesMentioning(dir: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid)) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
      let cwd = '';
      try {
        cwd = readlinkSync(`/proc/${pid}/cwd`);
      } catch {
        // a zombie has none
      }
      if (cmdline.includes(dir) || environ.includes(dir) || cwd === dir || cwd.startsWith(`${dir}/`))
        found.push(`${pid} ${cmdline || '(zombie)'}`);
    } catch {
      // gone, or a kernel thread
    }
  }
  return found;
}

/** SIGKILL to every process `processesMentioning(dir)` finds; the lines of those it found. */
export function killProcessesMentioning(dir: string): string[] {
  const found = processesMentioning(dir);
  for (const line of found) {
    try {
      process.kill(Number(line.split(' ')[0]), 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/**
 * Kills every process whose working directory lies under `dir` (the web processes and steps of a test
 * file's environments). Tests that SIGKILL a worker on purpose leave its supervised processes behind;
 * this keeps them from outliving the file. Linux (/proc) only; elsewhere it does nothing.
 */
export function killProcessesUnder(dir: string): number {
  let killed = 0;
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return 0;
  }
  for (const pid of pids) {
    let cwd: string;
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      continue; // gone, or not ours to read
    }
    if (cwd === dir || cwd.startsWith(`${dir}/`)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
        killed++;
      } catch {
        // already gone
      }
    }
  }
  return killed;
}

/**
 * The processes (`pid cmdline`, zombies left out) running under a tenant uid of the ports `from`-`to`
 * (host/provider/sandbox.ts tenantUid): the sandboxes of those environments, whose working directory (/app, in
 * their own mount namespace) tells nothing.
 */
export function tenantProcessesOfPorts(from: number, to: number): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
      if (uid < tenantUid(from) || uid > tenantUid(to) || /^State:\s+[ZX]/m.test(status)) continue;
      found.push(`${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim()}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/**
 * Kills the sandboxes of a test file's environments (tenantProcessesOfPorts). A worker killed on purpose leaves
 * them serving, and a test that fails before its worker stops them too; the next file of the same vitest worker
 * takes the same port range, so the same uids.
 */
export function killTenantsOfPorts(from: number, to: number): number {
  let killed = 0;
  for (const line of tenantProcessesOfPorts(from, to)) {
    try {
      process.kill(Number(line.split(' ')[0]), 'SIGKILL');
      killed++;
    } catch {
      // gone meanwhile
    }
  }
  return killed;
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * A real system process (`processes/worker.ts` or `processes/api.ts`) with this test file's database, Temporal
 * task queue, data directory and port range, in its own process group so that the test can kill it
 * whole (SIGKILL, as a crash would). Extra env wins. Worker processes leave the fixed-id reminder
 * schedule alone and load the run's prebuilt workflow bundle.
 */
export function spawnSystemProcess(
  t: TestContext,
  script: 'processes/worker.ts' | 'processes/api.ts' | 'processes/edge.ts' | 'processes/shipper.ts',
  env: Record<string, string> = {},
  /** A launcher that runs the process, given its environment's names (`systemd-socket-activate -l <path>`). */
  via?: string[],
): ChildProcess {
  const { from, to } = t.config.environmentPorts;
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: t.databaseUrl,
    TEMPORAL_ADDRESS: t.config.temporalAddress,
    TEMPORAL_TASK_QUEUE: t.config.taskQueue,
    DATA_DIR: t.dataDir,
    ENVIRONMENT_PORTS: `${from}-${to}`,
    INSTANCE_PORTS: `${t.config.instancePorts.from}-${t.config.instancePorts.to}`,
    LOCAL_REPOSITORY_ROOTS: t.config.localRepositoryRoots.join(','),
    BACKUP_LOCAL_ROOTS: t.config.backupLocalRoots.join(','),
    OUTBOUND_ALLOWED_HOSTS: t.config.outboundAllowedHosts.join(','),
    SANDBOX_SHARED_DIRS: t.config.sandboxSharedDirs.join(','),
    SERVICES_DATABASE_URL: t.config.servicesDatabaseUrl ?? '',
    LOG_LEVEL: 'warn', // its warnings and errors, kept for a failure's message (childReport)
    REMINDER_SCHEDULE: 'off',
    VC_WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    VC_PROCESS_BUNDLES: inject('processBundles'),
    ...env,
  };
  // its bundle, as npm start runs it (processes/process-bundles.ts: start-children.ts reads it the same way)
  const node = [process.execPath, ...nodeArgs(root, script, givenProcessBundles(childEnv))];
  const [command, ...args] = via ? [...via, ...Object.keys(childEnv).flatMap((k) => ['-E', k]), ...node] : node;
  const child = spawn(command, args, { cwd: root, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: childEnv });
  keepTail(child);
  return child;
}

/**
 * An API process of the file's own (processes/api.ts, as npm start runs it) on a free loopback port, pushed on
 * `children`, once its /health answers: the base URL of its API.
 */
export async function spawnApi(t: TestContext, children: ChildProcess[], env: Record<string, string> = {}) {
  const port = await freePort();
  children.push(spawnSystemProcess(t, 'processes/api.ts', { PORT: String(port), HOST: '127.0.0.1', ...env }));
  const url = `http://127.0.0.1:${port}/api/vc/v1`;
  const deadline = Date.now() + 60_000;
  while (
    !(await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    ))
  ) {
    if (Date.now() > deadline) throw new Error('the API process did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  return url;
}

const tails = new WeakMap<ChildProcess, string[]>();

/**
 * Keeps the last ~8 KB of a system process's output (its log's warnings and errors, a crash, Temporal's warnings)
 * for a failure's message.
 */
function keepTail(child: ChildProcess): void {
  const chunks: string[] = [];
  let size = 0;
  tails.set(child, chunks);
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      chunks.push(chunk);
      size += chunk.length;
      while (size > 8192 && chunks.length > 1) size -= chunks.shift()!.length;
    });
  }
}

/** How a system process ended (or that it runs) and the end of its output: for a failed assertion's message. */
export function childReport(child: ChildProcess): string {
  const state =
    child.exitCode !== null || child.signalCode !== null
      ? `pid ${child.pid} exited (code ${child.exitCode}, signal ${child.signalCode})`
      : `pid ${child.pid} runs`;
  return `${state}; its output ended with:\n${(tails.get(child) ?? []).join('').slice(-8192)}`;
}

/** Sends a signal to the child's whole process group. */
export function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // already gone
  }
}

/** Kills the child's process group with `signal` and waits for the child to exit. */
export async function killAndWait(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  killGroup(child, signal);
  await exited;
}

/** For afterAll: each child still running gets SIGTERM, and SIGKILL after `graceMs`. */
export async function stopChildren(children: ChildProcess[], graceMs = 10_000): Promise<void> {
  for (const c of children) {
    if (c.exitCode !== null || c.signalCode !== null) continue;
    const exited = new Promise((r) => c.once('exit', r));
    killGroup(c, 'SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, graceMs))]);
    killGroup(c, 'SIGKILL');
  }
}

/** The cgroup leaves (`web-<pid>`) in which the environment's web instances run now, one per instance. */
export function webLeaves(envId: string): string[] {
  const leaves = new Set<string>();
  for (const entry of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const leaf = new RegExp(`/${cgroupSubtree()}/${envId}/(web-\\d+)$`, 'm').exec(
        readFileSync(`/proc/${entry}/cgroup`, 'utf8'),
      );
      if (leaf) leaves.add(leaf[1]);
    } catch {
      // gone meanwhile
    }
  }
  return [...leaves];
}

/**
 * A sandboxed process seen from the host. It runs in its own pid namespace, so the pid it reports (its
 * `process.pid`) is not the host's: this finds, among the host's processes in one of the environment's
 * `<role>-*` cgroups, the one whose innermost pid is `nsPid` (the newest, when a replacement overlaps), and
 * answers its host pid and its cgroup as the host sees it. null when there is none.
 */
export function sandboxedProcess(
  envId: string,
  role: string,
  nsPid: number,
  withEnv: Record<string, string> = {},
): { pid: number; cgroup: string } | null {
  let found: { pid: number; cgroup: string; start: number } | null = null;
  for (const entry of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cgroups = readFileSync(`/proc/${entry}/cgroup`, 'utf8').split('\n');
      const line =
        cgroups.find((l) => /^\d+:[^:]*\bmemory\b[^:]*:/.test(l)) ?? cgroups.find((l) => l.startsWith('0::'));
      const cgroup = line?.slice(line.indexOf(':', line.indexOf(':') + 1) + 1) ?? '';
      if (!cgroup.includes(`/${cgroupSubtree()}/${envId}/${role}-`)) continue;
      const nspid =
        /^NSpid:\s+(.+)$/m
          .exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1]
          .trim()
          .split(/\s+/) ?? [];
      if (Number(nspid.at(-1)) !== nsPid) continue; // without a pid namespace: the host pid itself
      // Instances of one environment each have a pid namespace of their own: the same pid inside; their
      // environment (VC_INSTANCE) tells them apart.
      const wanted = Object.entries(withEnv).map(([k, v]) => `${k}=${v}`);
      if (wanted.length) {
        const environ = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
        if (!wanted.every((w) => environ.includes(w))) continue;
      }
      const start = Number(procStat(entry)[19]);
      if (!found || start > found.start) found = { pid: Number(entry), cgroup, start };
    } catch {
      // gone meanwhile
    }
  }
  return found && { pid: found.pid, cgroup: found.cgroup };
}
