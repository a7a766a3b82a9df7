import { loadPriceList, maxProcessesOf } from '../../core/pricing';
import type { Size } from '../../db/queries/machines';
import type { Config } from '../../system/config';
import { holdProcess, limitEnv, type Limits } from '../../host/provider/cgroups';

/** A server's or build machine's size as its processes are held to it: CPU, memory and its plan's max_processes. */
export function planLimits(config: Pick<Config, 'priceList'>, size: Size | null | undefined): Limits | null {
  if (!size) return null;
  return { cpu: size.cpu, memoryMb: size.memoryMb, maxProcesses: maxProcessesOf(loadPriceList(config), size) };
}

/**
 * What a build or deploy step of an environment needs to be held to a plan: VC_CPU and VC_MEMORY_MB for its
 * environment, and the hook that places it in its cgroup right after spawn. Without a plan: nothing.
 */
export function heldSteps(envId: string, role: 'build' | 'deploy', limits: Limits | null) {
  if (!limits) return { env: {}, onSpawn: undefined };
  return {
    env: limitEnv(limits),
    onSpawn: (pid: number) => void holdProcess(envId, role, pid, limits),
  };
}
