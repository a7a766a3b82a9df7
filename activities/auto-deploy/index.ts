/**
 * The auto-deploy poller's activity (workflows/auto-deploy.ts). The poller is started with the worker
 * (core/temporal-starts.ts `ensureAutoDeployPoller`): one per task queue, an existing one kept.
 */
import { Context } from '@temporalio/activity';
import type { Deps } from '../../system/deps';
import { autoDeployProject, autoDeployProjects } from '../../core/projects/auto-deploy';

/** Projects looked at side by side within one round. */
const PARALLEL = 4;

export function createAutoDeployActivities(deps: Deps) {
  return {
    /** One round: every project with auto_deploy on; returns the seconds to wait before the next. */
    async autoDeployRound(): Promise<{ sleepSeconds: number; started: number }> {
      const projects = await autoDeployProjects(deps);
      let started = 0;
      const queue = [...projects];
      const worker = async () => {
        for (let id = queue.shift(); id; id = queue.shift()) {
          try {
            started += (await autoDeployProject(deps, id)).filter((o) => o.status === 'started').length;
          } catch (err) {
            deps.logger.warn({ projectId: id, err: (err as Error).message }, 'auto-deploy: project not checked');
          }
          Context.current().heartbeat();
        }
      };
      await Promise.all(Array.from({ length: Math.min(PARALLEL, queue.length) }, worker));
      return { sleepSeconds: deps.config.autoDeployPollSeconds, started };
    },
  };
}
export type AutoDeployActivities = ReturnType<typeof createAutoDeployActivities>;
