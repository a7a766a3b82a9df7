/**
 * What an `npm start` leaves behind, and what a clean stop must not leave (issue 28, "orphan-proof"):
 * - `stopLeftChildren`: at start, the console's children a previous supervisor of this DATA_DIR left running
 *   (it died where setpriv could not tie them to it): stopped, group by group, before anything starts. The
 *   edge's data plane (HAProxy, Varnish) is adopted by the new edge instead, and the tenants' web processes
 *   by the new worker's restore.
 * - `takenEdgePorts`: EDGE_PORT and EDGE_TLS_PORT held by another program (HAProxy binds with `noreuseport`,
 *   so the edge could not serve them; before, both served, and the other answered half the requests). Not
 *   checked while this DATA_DIR's own HAProxy runs: the new edge adopts it with its listeners.
 * - `removeKernelState`: at a clean stop, once the worker has stopped the tenants, what the sandboxes made in
 *   the kernel: their network namespaces and veths (the environment ports' range), the services port's
 *   element in nft's `vc_services` set, and the forwards of the host's instance ports (`vc_instances`). Root
 *   only (nothing was made otherwise).
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { closeServicesPort, removeNetworksInRange } from '../host/provider/sandbox-network';
import { tenantServicesPort } from '../host/pg-server';
import { pruneInstanceForwards } from '../host/provider/instance-ports';
import { HaproxyProcess } from '../edge/haproxy/process';
import { haproxyPaths } from '../edge/haproxy/paths';
import type { Config } from '../system/config';
import { type ProcessesFile, runDir } from '../system/run-state';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

/** Whether `pid` still runs with DATA_DIR=`dataDir` (a pid reused by another program is left alone). */
function ofDataDir(pid: number, dataDir: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`DATA_DIR=${dataDir}`);
  } catch {
    return false;
  }
}

/** To the child's process group (each child leads its own), else to the child alone. */
function signal(pid: number, sig: NodeJS.Signals): void {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, sig);
      return;
    } catch {
      // not a group leader any more, or gone
    }
  }
}

/** Stops the children a dead supervisor of `dataDir` left running; their names. */
export async function stopLeftChildren(dataDir: string): Promise<string[]> {
  let file: ProcessesFile;
  try {
    file = JSON.parse(readFileSync(join(runDir(dataDir), 'processes.json'), 'utf8')) as ProcessesFile;
  } catch {
    return [];
  }
  if (file.supervisor_pid !== process.pid && alive(file.supervisor_pid)) return [];
  const left = file.processes.filter((p) => p.pid && alive(p.pid) && ofDataDir(p.pid, dataDir));
  for (const p of left) signal(p.pid!, 'SIGTERM');
  for (let waited = 0; waited < 30_000 && left.some((p) => alive(p.pid!)); waited += 200) await pause(200);
  for (const p of left.filter((x) => alive(x.pid!))) signal(p.pid!, 'SIGKILL');
  return left.map((p) => `${p.name} (pid ${p.pid})`);
}

/** Removes the sandboxes' namespaces and veths of this system's port range, and its services port's element. */
export async function removeKernelState(config: Config): Promise<void> {
  if (process.getuid?.() !== 0) return;
  await removeNetworksInRange(config.environmentPorts.from, config.environmentPorts.to);
  // only a port this system opened (a server that demands a password); a trusting one was never added
  const services = await tenantServicesPort(config).catch(() => ({ port: null }));
  if (services.port) await closeServicesPort(services.port).catch(() => undefined);
  // the forwards of this host's instance ports (a worker killed before it could take them away)
  await pruneInstanceForwards(config.hostAddress, config.instancePorts, []).catch(() => undefined);
}

function bindable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, host, () => s.close(() => resolve(true)));
  });
}

/** `EDGE_PORT 8000`, ... for each of the edge's own ports another program holds. */
export async function takenEdgePorts(config: Config): Promise<string[]> {
  if (await new HaproxyProcess(haproxyPaths(config.dataDir)).running()) return [];
  const taken: string[] = [];
  for (const [name, port] of [
    ['EDGE_PORT', config.edgePort],
    ['EDGE_TLS_PORT', config.acme.tlsPort],
  ] as const)
    if (!(await bindable(config.environmentBind, port))) taken.push(`${name} ${config.environmentBind}:${port}`);
  return taken;
}
