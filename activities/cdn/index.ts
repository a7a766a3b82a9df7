/**
 * cdn_clear: the purge is recorded in PostgreSQL (`cdn_purges`, announced on `vc_edge`), where every edge
 * reads it; the task then waits until each live edge (`edge_instances`, checked in lately) reports it
 * applied. An edge that is down has no cache (it is in memory), and one that starts later begins empty.
 */
import { Context } from '@temporalio/activity';
import type { Deps } from '../../system/deps';
import { withTaskLog } from '../toolkit/task-log';
import { edgesBehind, recordCdnPurge } from '../../db/queries/cdn';
import { userFault } from '../toolkit/failures';

const WAIT_MS = 60_000;

export function createCdnActivities(deps: Deps) {
  return {
    async recordCdnPurge(input: {
      taskId: string;
      environmentId: string;
      prefixes: string[];
    }): Promise<{ purgeId: number }> {
      const env = await deps.knex('environments').where({ id: input.environmentId }).first('id');
      if (!env) throw userFault('EnvironmentMissing', 'the environment no longer exists');
      const purgeId = await recordCdnPurge(deps.knex, input);
      await withTaskLog(deps, input.taskId, async (log) =>
        log.line(
          input.prefixes.length
            ? `==> Clearing the CDN under ${input.prefixes.join(', ')}`
            : '==> Clearing everything the CDN holds',
        ),
      );
      return { purgeId };
    },

    /** Waits until every live edge has applied the purge; the number of edges that had to apply it. */
    async awaitCdnPurge(input: { taskId: string; purgeId: number }): Promise<{ ok: boolean; edges: number }> {
      const deadline = Date.now() + WAIT_MS;
      const waited = new Set<string>();
      for (;;) {
        const behind = await edgesBehind(deps.knex, input.purgeId);
        for (const id of behind) waited.add(id);
        if (behind.length === 0) break;
        if (Date.now() > deadline)
          throw userFault('PurgeIncomplete', `${behind.length} edge(s) did not apply the purge in time`);
        Context.current().heartbeat();
        await new Promise((r) => setTimeout(r, 100));
      }
      const live = await deps
        .knex('edge_instances')
        .where('purge_seq', '>=', input.purgeId)
        .count<{ count: string }[]>('id as count')
        .first();
      await withTaskLog(deps, input.taskId, async (log) =>
        log.line(`==> Applied by ${Number(live?.count ?? 0)} running edge(s): nothing cached before it is served`),
      );
      return { ok: true, edges: waited.size };
    },
  };
}

export type CdnActivities = ReturnType<typeof createCdnActivities>;
