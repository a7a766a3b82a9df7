import type { Deps } from '../system/deps';

export interface ActivitySet {
  /** Every activity function by name, as the workflows' proxyActivities see them. */
  activities: Record<string, (...args: any[]) => Promise<unknown>>;
  /** Called once the worker exists (e.g. bring supervised web processes back). */
  onWorkerStart?: () => Promise<void>;
  /** Called when the worker stops (e.g. stop supervised processes). */
  onWorkerStop?: () => Promise<void>;
}

/** The activities of every area, created with their dependencies (activities-dependency-injection). */
export async function createActivities(deps: Deps): Promise<ActivitySet> {
  void deps;
  return { activities: {} };
}
