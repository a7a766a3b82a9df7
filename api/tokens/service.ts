import { AccessToken } from '../../db/models/access-token';
import { Membership } from '../../db/models/membership';
import type { Deps } from '../../system/deps';
import type { Actor } from '../../core/actor';
import { errors } from '../../core/errors';
import { generateSecret, tokenDigest } from '../lib/token-format';
import type { CreateTokenInput } from './schemas';
import { recordActivity } from '../../db/queries/activity';

/**
 * Issues a personal access token for one team the caller is a member of. The string is returned
 * here only; the database keeps its keyed digest and the id of the key.
 */
export async function issueToken(
  deps: Deps,
  actor: Actor,
  input: CreateTokenInput,
): Promise<{ token: AccessToken; secret: string }> {
  if (actor.kind === 'token') throw errors.tokenNotAllowed();
  const member = await Membership.query(deps.knex).findOne({ user_id: actor.user.id, team_id: input.team_id });
  // Whether the team exists is not revealed: any team the caller is not in gets the same answer.
  if (!member) throw errors.invalid({ team_id: 'must be the id of a team you are a member of' });
  const secret = generateSecret('vcp_');
  const now = new Date();
  const token = await deps.knex.transaction(async (trx) => {
    const row = await AccessToken.query(trx).insertAndFetch({
      user_id: actor.user.id,
      team_id: input.team_id,
      purpose: input.purpose,
      digest: tokenDigest(secret, deps.secrets.tokenKey.key),
      key_id: deps.secrets.tokenKey.id,
      expires_in_days: input.expires_in_days,
      created_at: now,
      expires_at: new Date(now.getTime() + input.expires_in_days * 86_400_000),
    });
    await recordActivity(trx, {
      teamId: input.team_id,
      actor,
      kind: 'access',
      type: 'token_issued',
      summary: `Token "${input.purpose}" issued for ${input.expires_in_days} days`,
    });
    return row;
  });
  deps.logger.info({ tokenId: token.id, userId: actor.user.id, teamId: token.team_id }, 'access token issued');
  return { token, secret };
}

/** Every token the caller issued, newest first, revoked and expired ones included. */
export async function listTokens(deps: Deps, actor: Actor): Promise<AccessToken[]> {
  return AccessToken.query(deps.knex)
    .where('user_id', actor.user.id)
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ]);
}

/** Revokes one of the caller's tokens; revoking a revoked token changes nothing. */
export async function revokeToken(deps: Deps, actor: Actor, id: string): Promise<AccessToken> {
  const token = await AccessToken.query(deps.knex).findOne({ id, user_id: actor.user.id });
  if (!token) throw errors.notFound('token');
  if (token.revoked_at) return token;
  const [updated] = await deps.knex.transaction(async (trx) => {
    const rows = (await AccessToken.query(trx)
      .patch({ revoked_at: new Date() })
      .where({ id, user_id: actor.user.id })
      .whereNull('revoked_at')
      .returning('*')) as unknown as AccessToken[];
    if (rows[0])
      await recordActivity(trx, {
        teamId: token.team_id,
        actor,
        kind: 'access',
        type: 'token_revoked',
        summary: `Token "${token.purpose}" revoked`,
      });
    return rows;
  });
  if (updated) deps.logger.info({ tokenId: id, userId: actor.user.id }, 'access token revoked');
  // A concurrent revoke won the race: answer with what it stored.
  return updated ?? (await AccessToken.query(deps.knex).findById(id))!;
}
