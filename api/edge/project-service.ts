/** The project edge (CONTRACT "The edge"): one save of every part, applied by the edge on every environment. */
import type { Deps } from '../../system/deps';
import type { Actor } from '../../core/actor';
import { recordActivity } from '../../db/queries/activity';
import { untilEdgesServe } from '../../core/edge-wait';

interface Row {
  blocked_addresses: string[];
  blocked_user_agents: string[];
  rate_limit: { requests: number; per_seconds: number } | null;
  hsts: { max_age: number; include_subdomains: boolean; preload: boolean } | null;
  compression: boolean;
  maintenance_page: string | null;
  error_page: string | null;
}

function present(row: Row | undefined) {
  return {
    blocked_addresses: row?.blocked_addresses ?? [],
    blocked_user_agents: row?.blocked_user_agents ?? [],
    rate_limit: row?.rate_limit ?? null,
    hsts: row?.hsts ?? null,
    compression: row?.compression ?? false,
    pages: { maintenance: row?.maintenance_page ?? null, error: row?.error_page ?? null },
  };
}

export async function getProjectEdge(deps: Deps, projectId: string) {
  return present(await deps.knex('project_edges').where({ project_id: projectId }).first());
}

export async function updateProjectEdge(
  deps: Deps,
  actor: Actor,
  project: { id: string; team_id: string; name: string },
  input: {
    blocked_addresses?: string[];
    blocked_user_agents?: string[];
    rate_limit?: Row['rate_limit'];
    hsts?: Row['hsts'];
    compression?: boolean;
    pages?: { maintenance?: string | null; error?: string | null };
  },
) {
  const patch: Record<string, unknown> = {};
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
    const [saved] = await trx('project_edges')
      .insert({ project_id: project.id, ...patch, updated_at: trx.fn.now() })
      .onConflict('project_id')
      .merge({ ...patch, updated_at: trx.fn.now() })
      .returning('*');
    await recordActivity(trx, {
      teamId: project.team_id,
      actor,
      kind: 'configuration',
      type: 'project_edge_changed',
      projectId: project.id,
      summary: `changed ${Object.keys(input).join(', ')} of the edge of project ${project.name}`,
    });
    return saved as Row;
  });
  // answered once every edge serves it (503 edge_unavailable after 10 s: the change stays saved)
  await untilEdgesServe(deps.knex);
  return present(row);
}
