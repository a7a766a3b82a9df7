import { holdProcess, limitEnv, type Limits } from '../provider/cgroups';

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
