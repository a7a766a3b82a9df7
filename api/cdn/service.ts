/** The environment's CDN settings (CONTRACT "The edge"); the edge reads them through `vc_edge`. */
import type { Deps } from '../../system/deps';
import type { Actor } from '../../core/actor';
import { recordActivity } from '../../db/queries/activity';
import { getCdnSettings, saveCdnSettings, type CdnSettings } from '../../db/queries/cdn';
import { untilEdgesServe } from '../../core/edge-wait';

export function getCdn(deps: Deps, environmentId: string): Promise<CdnSettings> {
  return getCdnSettings(deps.knex, environmentId);
}

export async function updateCdn(
  deps: Deps,
  actor: Actor,
  env: { id: string; team_id: string; project_id: string; name: string },
  input: Partial<CdnSettings>,
): Promise<CdnSettings> {
  const saved = await deps.knex.transaction(async (trx) => {
    const saved = await saveCdnSettings(trx, env.id, input);
    const parts = [
      ...(input.enabled !== undefined ? [input.enabled ? 'enabled the CDN' : 'disabled the CDN'] : []),
      ...(input.default_ttl_seconds !== undefined ? [`set the default TTL to ${input.default_ttl_seconds} s`] : []),
    ];
    await recordActivity(trx, {
      teamId: env.team_id,
      actor,
      kind: 'configuration',
      type: 'cdn_changed',
      projectId: env.project_id,
      environmentId: env.id,
      summary: `${parts.join(' and ')} of ${env.name}`,
    });
    return saved;
  });
  // answered once every edge serves it (503 edge_unavailable after 10 s: the change stays saved)
  await untilEdgesServe(deps.knex);
  return saved;
}
