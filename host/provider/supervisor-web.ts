/**
 * The supervisor's web processes: starting one in its environment's sandbox (held to its plan, output to
 * web.log), ending an orphan left by a previous worker, and telling where an environment is served (the
 * route published to the edge).
 */
import { appendFile, chmod, realpath } from 'node:fs/promises';
import { closeSync, openSync, readFileSync, readlinkSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { holdProcess, limitEnv, type Limits, strayProcesses } from './cgroups';
import { webErrorLogPath } from '../environment-dir';
import { environmentDir } from './releases';
import { groupAlive, killGroup, type OnLine, processAlive } from './run-step';
import { forwardInstancePort, type InstanceExposure, unforwardInstancePort } from './instance-ports';
import { type Jail, openJail, RELEASE_MOUNT } from './sandbox';
import type { PublishedRoute, Runtime } from './supervisor-types';
import { delay, freePort, WebProcess, type Backoff } from './web-process';

export const WEB_LOG = 'web.log';

interface SpawnOptions {
  dataDir: string;
  envId: string;
  /** The environment's public port (its sandbox is keyed by it). */
  port: number;
  releaseId: string;
  releaseDir: string;
  command: string;
  env: Record<string, string | undefined>;
  limits?: Limits;
  /** The instance's slot (1..N): VC_INSTANCE in its environment. */
  slot: number;
  backoff: Backoff;
  /** Internal ports still in use in the environment's namespace (the new process takes another). */
  taken: number[];
  /** Called with each new pid, after the process is held to its plan. */
  onPid: (web: WebProcess) => void;
  /** WebProcessOptions.onCrashChange. */
  onCrashChange?: () => void;
  /** Where the edge reaches this host's instances, and who hands out their ports (none: the sandbox address). */
  exposure?: InstanceExposure;
  /** Instance ports not to take (a previous worker's instances still hold them). */
  reserved?: number[];
}

/** Starts a web process in the environment's sandbox on a fresh internal port; not yet supervised. */
export async function spawnWeb(o: SpawnOptions): Promise<WebProcess> {
  const jail = await openJail(o.dataDir, o.envId, o.port);
  const logPath = path.join(environmentDir(o.dataDir, o.envId), WEB_LOG);
  closeSync(openSync(logPath, 'a', 0o600));
  await chmod(logPath, 0o600); // the worker's alone: not readable by any environment
  // Processes still serving keep their ports (same namespace): the new one takes another.
  let internal = await freePort();
  while (o.taken.includes(internal)) internal = await freePort();
  const exposed = o.exposure ? await exposeInstance(o, o.exposure, jail, internal) : null;
  if (exposed && jail.mode !== 'namespaces') internal = exposed.port; // it listens on its instance port itself
  const limits = o.limits;
  const web: WebProcess = new WebProcess({
    label: o.slot === 1 ? `release ${o.releaseId}` : `release ${o.releaseId} (instance ${o.slot})`,
    command: o.command,
    cwd: o.releaseDir,
    env: { ...o.env, ...(limits ? limitEnv(limits) : {}), VC_INSTANCE: String(o.slot) },
    jail,
    port: internal,
    logPath,
    // stderr to its own file, tailed and shipped to the project's log destination (logs/error-tail.ts)
    errorLogPath: webErrorLogPath(o.dataDir, o.envId),
    backoff: o.backoff,
    onCrashChange: o.onCrashChange,
    ...(exposed ? { exposed: { host: exposed.host, port: exposed.port }, onStopped: exposed.release } : {}),
    onStart: (pid) => {
      if (limits) {
        try {
          holdProcess(o.envId, 'web', pid, limits);
        } catch (err) {
          const line = `[${new Date().toISOString()}] could not hold pid ${pid} to its plan: ${(err as Error).message}\n`;
          void appendFile(logPath, line).catch(() => undefined);
        }
      }
      o.onPid(web);
    },
  });
  web.start();
  return web;
}

/**
 * The instance's port on HOST_ADDRESS (instance-ports.ts): taken from the book, and forwarded into the sandbox
 * when it has a network namespace; without one, a port something of this machine listens on already is skipped
 * (the process will listen on it). `release` undoes both.
 */
async function exposeInstance(
  o: SpawnOptions,
  exposure: InstanceExposure,
  jail: Jail,
  internal: number,
): Promise<{ host: string; port: number; release: () => Promise<void> }> {
  const skip = [...(o.reserved ?? [])];
  for (;;) {
    const port = await exposure.book.take(o.envId, o.slot, skip);
    const release = async () => {
      if (jail.mode === 'namespaces') await unforwardInstancePort(exposure.address, port);
      await exposure.book.release(port);
    };
    try {
      if (jail.mode === 'namespaces')
        await forwardInstancePort(exposure.address, port, { host: jail.address, port: internal });
      else if (!(await bindable(exposure.address, port))) {
        await exposure.book.release(port);
        skip.push(port);
        continue;
      }
    } catch (err) {
      await release().catch(() => undefined);
      throw err;
    }
    return { host: exposure.address, port, release };
  }
}

/** Whether a process of this machine could listen on address:port now. */
function bindable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/**
 * Web processes of the environment that are none of `keep` (the instances the supervisor runs, by group leader
 * pid) and that current.json did not record: an instance a worker killed in the middle of a restart or a move
 * had started. Nothing routes to them; left alone, they would run on for good beside the real ones. SIGTERM,
 * then SIGKILL after graceMs.
 */
export async function killStrays(envId: string, keep: number[], graceMs: number): Promise<number> {
  const strays = strayProcesses(envId, 'web', keep);
  const signal = (pid: number, sig: NodeJS.Signals) => {
    try {
      process.kill(pid, sig);
    } catch {
      // gone meanwhile
    }
  };
  for (const pid of strays) signal(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (strays.some(processAlive) && Date.now() < deadline) await delay(25);
  for (const pid of strays.filter(processAlive)) signal(pid, 'SIGKILL');
  return strays.length;
}

/** A web process group left by a previous worker: killed if its pid still runs in that release dir. */
export async function killOrphan(pid: number, releaseDir: string, graceMs: number, envId: string): Promise<void> {
  let cwd: string;
  try {
    cwd = readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return;
  }
  const dir = await realpath(releaseDir).catch(() => releaseDir);
  // in a sandbox, the release is at RELEASE_MOUNT: then the process must also be in the environment's cgroups
  const sandboxed = cwd === RELEASE_MOUNT && inCgroupsOf(pid, envId);
  if ((cwd !== dir && !sandboxed) || !groupAlive(pid)) return;
  killGroup(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (groupAlive(pid) && Date.now() < deadline) await delay(25);
  killGroup(pid, 'SIGKILL');
}

function inCgroupsOf(pid: number, envId: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cgroup`, 'utf8')
      .split('\n')
      .some((l) => l.split('/').includes(envId));
  } catch {
    return false;
  }
}

/** Where the edge should send the environment's requests now: every instance (its exposed address), slot 1 first. */
export function publishedRoute(rt: Runtime): PublishedRoute {
  const live = rt.live;
  const webs = live?.webs ?? [];
  if (live && webs.length > 0)
    return {
      kind: 'upstream',
      host: webs[0].exposed.host,
      port: webs[0].exposed.port,
      releaseId: live.releaseId,
      upstreams: webs.map((w, i) => ({ id: String(i + 1), host: w.exposed.host, port: w.exposed.port })),
    };
  return {
    kind: 'unavailable',
    text: live ? 'no web process' : 'no release is live',
    releaseId: live?.releaseId ?? null,
  };
}

export function safe(onLine: OnLine | undefined, line: string, stream: 'stdout' | 'stderr' = 'stdout'): void {
  try {
    onLine?.(stream, line);
  } catch {
    // a failing log sink does not change the outcome
  }
}
