/** The project edge (CONTRACT "The edge"): one save of every part, applied by the edge on every environment. */
import type { Deps } from '../../system/deps';
import type { Actor } from '../../core/actor';
import { recordActivity } from '../../db/queries/activity';
import { untilEdgesServe } from '../../core/edge-wait';
import {
  projectEdgeOf,
  saveProjectEdge,
  type ProjectEdgePatch,
  type ProjectEdgeRow,
} from '../../db/queries/edge-settings';

export async function getProjectEdge(deps: Deps, projectId: string) {
  return { edge: await projectEdgeOf(deps.knex, projectId) };
}

export async function updateProjectEdge(
  deps: Deps,
  actor: Actor,
  project: { id: string; team_id: string; name: string },
  input: {
    blocked_addresses?: string[];
    blocked_user_agents?: string[];
    rate_limit?: ProjectEdgeRow['rate_limit'];
    hsts?: ProjectEdgeRow['hsts'];
    compression?: boolean;
    pages?: { maintenance?: string | null; error?: string | null };
  },
) {
  const patch: ProjectEdgePatch = {};
  if (input.blocked_addresses !== undefined)
    patch.blocked_addresses = JSON.stringify([...new Set(input.blocked_addresses)]);
  if (input.blocked_user_agents !== undefined)
    patch.blocked_user_agents = JSON.stringify([...new Set(input.blocked_user_agents)]);
  if (input.rate_limit !== undefined)
    patch.rate_limit = input.rate_limit === null ? null : JSON.stringify(input.rate_limit);
  if (input.hsts !== undefined) patch.hsts = input.hsts === null ? null : JSON.stringify(input.hsts);
  if (input.compression !== undefined) patch.compression = input.compression;
  if (input.pages?.maintenance !== undefined) patch.maintenance_page = input.pages.maintenance;
  if (input.pages?.error !== undefined) patch.error_page = input.pages.error;
  const row = await deps.knex.transaction(async (trx) => {
    const saved = await saveProjectEdge(trx, project.id, patch);
    await recordActivity(trx, {
      teamId: project.team_id,
      actor,
      kind: 'configuration',
      type: 'project_edge_changed',
      projectId: project.id,
      summary: `changed ${Object.keys(input).join(', ')} of the edge of project ${project.name}`,
    });
    return saved;
  });
  // answered once every edge serves it (503 edge_unavailable after 10 s: the change stays saved)
  await untilEdgesServe(deps.knex);
  return { edge: row };
}
