import type { Middleware } from 'koa';
import type { Deps } from '../../system/deps';
import { isOperator } from '../lib/operator';
import type { CredentialCache } from '../../system/credential-cache';
import { AccessToken } from '../../db/models/access-token';
import { Membership } from '../../db/models/membership';
import { Session } from '../../db/models/session';
import { User } from '../../db/models/user';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';
import { isWellFormed, sessionDigest, tokenDigest } from '../lib/token-format';

export const SESSION_COOKIE = 'vc_session';

const USER_COLUMNS = ['id', 'email', 'name', 'password_hash', 'email_confirmed_at', 'created_at', 'updated_at'];
const MEMBERSHIP_COLUMNS = ['id', 'team_id', 'user_id', 'role', 'created_at', 'updated_at'];

/** `prefix__column` fields of a joined row, as one record (null when the left join found nothing). */
function pick(row: Record<string, unknown>, prefix: string, columns: string[]): Record<string, unknown> | null {
  if (row[`${prefix}__id`] === null || row[`${prefix}__id`] === undefined) return null;
  return Object.fromEntries(columns.map((c) => [c, row[`${prefix}__${c}`]]));
}

/** A live session (browser or command line) by its secret, with its user: one query. */
async function findLiveSession(deps: Deps, secret: string): Promise<{ session: Session; user: User } | undefined> {
  const row = await deps
    .knex('sessions as s')
    .join('users as u', 'u.id', 's.user_id')
    .where('s.secret_digest', sessionDigest(secret))
    .whereNull('s.ended_at')
    .where('s.expires_at', '>', new Date())
    .select('s.*', ...USER_COLUMNS.map((c) => `u.${c} as u__${c}`))
    .first();
  if (!row) return undefined;
  const user = pick(row, 'u', USER_COLUMNS)!;
  for (const c of USER_COLUMNS) delete row[`u__${c}`];
  return { session: Session.fromDatabaseJson(row), user: User.fromDatabaseJson(user) };
}

type TokenCheck =
  | { ok: true; actor: Actor }
  | { ok: false; reason: string }
  /** A working token whose issuer has left its team: counted as a working credential, reaches nothing. */
  | { ok: false; reason: string; memberless: AccessToken };

/** What a token look-up finds for a working token: kept by the credential cache (system/credential-cache.ts). */
export interface TokenFound {
  token: AccessToken;
  user: User;
  membership: Membership;
}

/** The credential cache of Deps, as this file, its one writer and reader, fills it (system/ knows no db model). */
const tokenCache = (deps: Deps) => deps.credentials as CredentialCache<TokenFound> | undefined;

/** Expiry is decided here, on every request, so a cached token stops at its expires_at to the second. */
function verdict(found: TokenFound): TokenCheck {
  if (found.token.statusAt() === 'expired') return { ok: false, reason: 'The token has expired' };
  return { ok: true, actor: { kind: 'token', via: 'token', ...found } };
}

/**
 * The token by its keyed digest (under the current key and any previous ones), with its issuer and
 * the issuer's membership in the token's team: one query, or none while the cache holds it.
 */
async function checkAccessToken(deps: Deps, raw: string): Promise<TokenCheck> {
  const { tokenKey, previousTokenKeys } = deps.secrets;
  const current = tokenDigest(raw, tokenKey.key);
  const cache = tokenCache(deps);
  const cached = cache?.get(current);
  if (cached) return verdict(cached);
  const ticket = cache?.ticket() ?? 0;
  const digests = [current, ...[...previousTokenKeys.values()].map((key) => tokenDigest(raw, key))];
  const row = await deps
    .knex('access_tokens as t')
    .join('users as u', 'u.id', 't.user_id')
    .leftJoin('memberships as m', (j) => j.on('m.user_id', 't.user_id').andOn('m.team_id', 't.team_id'))
    .whereIn('t.digest', digests)
    .select(
      't.*',
      ...USER_COLUMNS.map((c) => `u.${c} as u__${c}`),
      ...MEMBERSHIP_COLUMNS.map((c) => `m.${c} as m__${c}`),
    )
    .first();
  if (!row) return { ok: false, reason: 'The token does not work' };
  const user = pick(row, 'u', USER_COLUMNS)!;
  const membership = pick(row, 'm', MEMBERSHIP_COLUMNS);
  for (const c of USER_COLUMNS) delete row[`u__${c}`];
  for (const c of MEMBERSHIP_COLUMNS) delete row[`m__${c}`];
  const token = AccessToken.fromDatabaseJson(row);
  const status = token.statusAt();
  if (status === 'revoked') return { ok: false, reason: 'The token was revoked' };
  if (status === 'expired') return { ok: false, reason: 'The token has expired' };
  if (!membership)
    return {
      ok: false,
      reason: "The token's issuer is no longer a member of its team; the token reaches nothing",
      memberless: token,
    };
  const found: TokenFound = {
    token,
    user: User.fromDatabaseJson(user),
    membership: Membership.fromDatabaseJson(membership),
  };
  // A token found under a previous key (docs/encryption-keys.md) takes the current key's digest at this use, once
  // (a compare-and-set: another process's use may have moved it already); the key can be retired once none is left.
  if (token.digest !== current) await redigestToken(deps, token, current);
  // Kept under the current key's digest only (a token under a previous key is looked up each time).
  else cache?.set(current, found, { tokenId: token.id, userId: token.user_id, teamId: token.team_id }, ticket);
  return verdict(found);
}

/**
 * Resolves the caller: a bearer credential (`vcp_` personal access token or `vcs_` command-line
 * session) or the browser session cookie. A request with no Authorization header is not counted as
 * a failed credential; a header that does not work is, per client address.
 */
export function authenticate(deps: Deps): Middleware {
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    // The operator's METRICS_TOKEN is no person's credential: the request goes on without one (what it opens:
    // /health's host details, api/lib/operator.ts); a wrong guess is a failed credential like any other.
    if (header && deps.config.metricsToken && isOperator(ctx, deps.config)) return next();
    if (header) {
      const address = ctx.ip;
      const { failures } = await deps.guards.assertAddressAllowed(address);
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
      if (!result.ok && !('memberless' in result)) {
        await deps.guards.recordFailure(address);
        throw errors.unauthenticated(result.reason);
      }
      // A working credential clears the address's consecutive failures (a store round trip: only if any).
      if (failures > 0) await deps.guards.recordSuccess(address);
      const token = result.ok ? (result.actor.kind === 'token' ? result.actor.token : undefined) : result.memberless;
      if (token) {
        const headers = await deps.guards.consumeTokenRequest(token.id);
        for (const [k, v] of Object.entries(headers)) ctx.set(k, v);
        await touchLastUsed(deps, token);
      }
      if (!result.ok) throw appError('forbidden', result.reason);
      ctx.state.actor = result.actor;
    } else {
      const cookie = ctx.cookies.get(SESSION_COOKIE);
      if (cookie) {
        const found = await findLiveSession(deps, cookie);
        if (found && found.session.kind === 'browser') {
          ctx.state.actor = {
            kind: 'session',
            via: 'session',
            user: found.user,
            session: found.session,
          } satisfies Actor;
        }
      }
    }
    await next();
  };
}

/** last_used_at is written at most once a minute per token (and per API process). */
async function touchLastUsed(deps: Deps, token: AccessToken): Promise<void> {
  const now = new Date();
  if (token.last_used_at && now.getTime() - token.last_used_at.getTime() < 60_000) return;
  // The cached token remembers the write, so the next requests of this minute skip it.
  token.last_used_at = now;
  await deps
    .knex('access_tokens')
    .where({ id: token.id })
    .andWhere((q) => q.whereNull('last_used_at').orWhere('last_used_at', '<', new Date(now.getTime() - 60_000)))
    .update({ last_used_at: now });
}

/** A token found under a previous token key takes the current key's digest (at most once: compare-and-set). */
async function redigestToken(deps: Deps, token: AccessToken, current: string): Promise<void> {
  await deps
    .knex('access_tokens')
    .where({ id: token.id, digest: token.digest })
    .update({ digest: current, key_id: deps.secrets.tokenKey.id });
}
