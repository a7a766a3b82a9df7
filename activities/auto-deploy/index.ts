/**
 * The auto-deploy poller's activity (workflows/auto-deploy.ts) and its start with the worker: one poller per
 * task queue, started if none runs (an existing one is kept: its rounds read the current settings).
 */
import { Context } from '@temporalio/activity';
import { WorkflowIdConflictPolicy } from '@temporalio/client';
import type { Deps } from '../../system/deps';
import { autoDeployProject, autoDeployProjects } from '../../core/projects/auto-deploy';
import { searchAttributeKeys } from '../../core/tasks';
import { workflowIds } from '../../workflows/shared';

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

/** Starts the poller of this worker's task queue unless it runs already (AUTO_DEPLOY_POLL_SECONDS=0: none). */
export async function ensureAutoDeployPoller(deps: Deps): Promise<void> {
  if (deps.config.autoDeployPollSeconds <= 0) return;
  const k = searchAttributeKeys;
  await deps.temporal.workflow.start('pollAutoDeploys', {
    taskQueue: deps.config.taskQueue,
    workflowId: workflowIds.autoDeployPoller(deps.config.taskQueue),
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    args: [],
    staticSummary: 'Auto-deploy: starts a deploy when the git ref of an environment with auto_deploy moves',
    typedSearchAttributes: [
      { key: k.TaskKind, value: 'deployments' },
      { key: k.TaskType, value: 'auto_deploy_poller' },
    ],
  });
}
