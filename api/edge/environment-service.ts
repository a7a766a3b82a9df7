/**
 * The environment edge (CONTRACT "The edge"): allowed client CIDRs (403 outside a non-empty list), a Basic
 * password (401 with WWW-Authenticate; stored as an argon2id hash and, for HAProxy, a keyed HMAC digest
 * (system/edge-password.ts); neither is ever shown) and stickiness.
 */
import type { Deps } from '../../system/deps';
import type { Actor } from '../../core/actor';
import { hashPassword } from '../../core/passwords';
import { recordActivity } from '../../db/queries/activity';
import { edgePasswordDigest, edgePasswordKey } from '../../system/edge-password';
import { untilEdgesServe } from '../../core/edge-wait';
import { environmentEdgeOf, saveEnvironmentEdge, type EnvironmentEdgePatch } from '../../db/queries/edge-settings';

export async function getEnvironmentEdge(deps: Deps, environmentId: string) {
  return { edge: await environmentEdgeOf(deps.knex, environmentId) };
}

export async function updateEnvironmentEdge(
  deps: Deps,
  actor: Actor,
  env: { id: string; team_id: string; project_id: string; name: string },
  input: {
    allowed_addresses?: string[];
    password?: { username: string; password: string } | null;
    stickiness?: boolean;
  },
) {
  const patch: EnvironmentEdgePatch = {};
  if (input.allowed_addresses !== undefined)
    patch.allowed_addresses = JSON.stringify([...new Set(input.allowed_addresses)]);
  if (input.password === null)
    Object.assign(patch, {
      password_username: null,
      password_hash: null,
      password_digest: null,
      password_digest_key_id: null,
    });
  else if (input.password) {
    const key = edgePasswordKey(deps.secrets);
    Object.assign(patch, {
      password_username: input.password.username,
      password_hash: await hashPassword(input.password.password),
      password_digest: edgePasswordDigest(key, input.password.username, input.password.password),
      password_digest_key_id: key.id,
    });
  }
  if (input.stickiness !== undefined) patch.stickiness = input.stickiness;
  const row = await deps.knex.transaction(async (trx) => {
    const saved = await saveEnvironmentEdge(trx, env.id, patch);
    await recordActivity(trx, {
      teamId: env.team_id,
      actor,
      kind: 'configuration',
      type: 'environment_edge_changed',
      projectId: env.project_id,
      environmentId: env.id,
      summary: `changed ${Object.keys(input).join(', ')} of the edge of ${env.name}`,
    });
    return saved;
  });
  // answered once every edge serves it (503 edge_unavailable after 10 s: the change stays saved)
  await untilEdgesServe(deps.knex);
  return { edge: row };
}
