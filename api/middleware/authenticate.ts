import type { Middleware } from 'koa';
import type { Deps } from '../../system/deps';
import { AccessToken } from '../../db/models/access-token';
import { Membership } from '../../db/models/membership';
import { Session } from '../../db/models/session';
import { User } from '../../db/models/user';
import type { Actor } from '../lib/actor';
import { AppError, errors } from '../lib/errors';
import { isWellFormed, sessionDigest, tokenDigest } from '../lib/token-format';

export const SESSION_COOKIE = 'vc_session';

/** A live session (browser or command line) by its secret, with its user. */
export async function findLiveSession(deps: Deps, secret: string): Promise<{ session: Session; user: User } | undefined> {
  const session = await Session.query(deps.knex)
    .findOne({ secret_digest: sessionDigest(secret) })
    .whereNull('ended_at')
    .where('expires_at', '>', new Date());
  if (!session) return undefined;
  const user = await User.query(deps.knex).findById(session.user_id);
  return user ? { session, user } : undefined;
}

type TokenCheck = { ok: true; actor: Actor } | { ok: false; reason: string };

async function checkAccessToken(deps: Deps, raw: string): Promise<TokenCheck> {
  const { tokenKey, previousTokenKeys } = deps.secrets;
  let token = await AccessToken.query(deps.knex).findOne({ digest: tokenDigest(raw, tokenKey.key) });
  if (!token) {
    for (const key of previousTokenKeys.values()) {
      token = await AccessToken.query(deps.knex).findOne({ digest: tokenDigest(raw, key) });
      if (token) break;
    }
  }
  if (!token) return { ok: false, reason: 'The token does not work' };
  const status = token.statusAt();
  if (status === 'revoked') return { ok: false, reason: 'The token was revoked' };
  if (status === 'expired') return { ok: false, reason: 'The token has expired' };
  const user = await User.query(deps.knex).findById(token.user_id);
  if (!user) return { ok: false, reason: 'The token does not work' };
  return { ok: true, actor: { kind: 'token', via: 'token', user, token } };
}

/**
 * Resolves the caller: a bearer credential (`vcp_` personal access token or `vcs_` command-line
 * session) or the browser session cookie. A request with no Authorization header is not counted as
 * a failed credential; a header that does not work is, per client address.
 */
export function authenticate(deps: Deps): Middleware {
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    if (header) {
      const address = ctx.ip;
      await deps.guards.assertAddressAllowed(address);
      const raw = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] ?? '';
      let result: TokenCheck = { ok: false, reason: 'The credential does not work' };
      if (isWellFormed(raw, 'vcp_')) {
        result = await checkAccessToken(deps, raw);
      } else if (isWellFormed(raw, 'vcs_')) {
        const found = await findLiveSession(deps, raw);
        if (found && found.session.kind === 'cli') {
          result = { ok: true, actor: { kind: 'session', via: 'cli', user: found.user, session: found.session } };
        }
      }
      if (!result.ok) {
        await deps.guards.recordFailure(address);
        throw errors.unauthenticated(result.reason);
      }
      await deps.guards.recordSuccess(address);
      const actor = result.actor;
      if (actor.kind === 'token') {
        const headers = await deps.guards.consumeTokenRequest(actor.token.id);
        for (const [k, v] of Object.entries(headers)) ctx.set(k, v);
        await touchLastUsed(deps, actor.token);
        const member = await Membership.query(deps.knex).findOne({ user_id: actor.user.id, team_id: actor.token.team_id });
        if (!member) {
          throw new AppError(403, 'forbidden', "The token's issuer is no longer a member of its team; the token reaches nothing");
        }
      }
      ctx.state.actor = actor;
    } else {
      const cookie = ctx.cookies.get(SESSION_COOKIE);
      if (cookie) {
        const found = await findLiveSession(deps, cookie);
        if (found && found.session.kind === 'browser') {
          ctx.state.actor = { kind: 'session', via: 'session', user: found.user, session: found.session } satisfies Actor;
        }
      }
    }
    await next();
  };
}

/** last_used_at is written at most once a minute per token. */
async function touchLastUsed(deps: Deps, token: AccessToken): Promise<void> {
  const now = new Date();
  if (token.last_used_at && now.getTime() - token.last_used_at.getTime() < 60_000) return;
  await deps.knex('access_tokens')
    .where({ id: token.id })
    .andWhere((q) => q.whereNull('last_used_at').orWhere('last_used_at', '<', new Date(now.getTime() - 60_000)))
    .update({ last_used_at: now });
}
