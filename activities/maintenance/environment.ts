/**
 * maintenance_on / maintenance_off: the environment's maintenance state lives in PostgreSQL, where the
 * edge reads it (a change is announced on `vc_edge` by the environments trigger), so it takes effect on
 * every edge at once and survives restarts of the worker and the edge.
 */
import type { Deps } from '../../system/deps';
import { withTaskLog } from '../toolkit/task-log';
import { userFault } from '../toolkit/failures';
import { untilEdgesApply } from '../toolkit/edge-wait';

export function createEnvironmentMaintenanceActivities(deps: Deps) {
  return {
    async setEnvironmentMaintenance(input: {
      taskId: string;
      environmentId: string;
      on: boolean;
      note: string | null;
    }): Promise<void> {
      return withTaskLog(deps, input.taskId, async (log) => {
        const n = await deps
          .knex('environments')
          .where({ id: input.environmentId })
          .update(
            input.on
              ? {
                  maintenance_on: true,
                  maintenance_note: input.note,
                  maintenance_since: deps.knex.raw(
                    'COALESCE(CASE WHEN maintenance_on THEN maintenance_since END, now())',
                  ),
                }
              : { maintenance_on: false, maintenance_note: null, maintenance_since: null },
          );
        if (n === 0) throw userFault('EnvironmentMissing', 'the environment no longer exists');
        // done once every edge answers accordingly (the page, or traffic again); else the task fails, naming it
        await untilEdgesApply(
          { knex: deps.knex, seconds: deps.config.edgeTaskWaitSeconds, environmentId: input.environmentId },
          (l) => log.line(l),
        );
        log.line(
          input.on
            ? '==> Maintenance on: the edge answers 503 with the maintenance page'
            : '==> Maintenance off: traffic flows again',
        );
      });
    },
  };
}

export type EnvironmentMaintenanceActivities = ReturnType<typeof createEnvironmentMaintenanceActivities>;
