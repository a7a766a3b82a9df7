/**
 * The daily prune's half of cancelling a project (api/projects/cancel-service.ts is the HTTP half): the environments
 * of a project cancelled more than CANCELLED_PROJECT_KEEP_DAYS ago are deleted.
 */
import type { Deps } from '../../system/deps';
import { recordActivity } from '../../db/queries/activity';
import { tombstoneEnvironment } from '../../db/queries/deleted-environments';
import { environmentsCancelledBefore } from '../../db/queries/environments';
import { dropEnvironmentServices, startRetire } from '../environment-retire';

export const CANCELLED_PROJECT_KEEP_DAYS = 30;
const DAY_MS = 86_400_000;

/**
 * The daily prune's part: deletes the environments of projects cancelled more than
 * CANCELLED_PROJECT_KEEP_DAYS before `asOf` (rows cascade; their database services are dropped). The
 * project stays, empty, until someone deletes it. Each environment goes as DELETE /environments/{id} takes it
 * (its host side retired by the retireEnvironment workflow). Returns how many environments went.
 */
export async function deleteCancelledEnvironments(deps: Deps, asOf: Date): Promise<number> {
  const due = await environmentsCancelledBefore(
    deps.knex,
    new Date(asOf.getTime() - CANCELLED_PROJECT_KEEP_DAYS * DAY_MS),
  );
  let deleted = 0;
  for (const { id } of due) {
    // As DELETE /environments/{id} takes it: a tombstone keeps its tasks, activity and snapshots 30 days more.
    const gone = await deps.knex.transaction(async (trx) => {
      const out = await tombstoneEnvironment(trx, id, null);
      if (out) {
        await recordActivity(trx, {
          teamId: out.team_id,
          actor: null,
          kind: 'configuration',
          type: 'environment_deleted',
          projectId: out.project_id,
          environmentId: id,
          summary: `Environment ${out.name} deleted ${CANCELLED_PROJECT_KEEP_DAYS} days after its project was cancelled`,
        });
      }
      return out;
    });
    if (!gone) continue;
    deleted++;
    await dropEnvironmentServices(deps, id, gone.databases);
    await startRetire(deps, id, gone.port, gone.host);
  }
  return deleted;
}
