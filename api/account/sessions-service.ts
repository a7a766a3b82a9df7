import type { Context } from 'koa';
import type { Knex } from 'knex';
import type { Deps } from '../../system/deps';
import { Session } from '../../db/models/session';
import { User } from '../../db/models/user';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';
import { dummyHash, verifyPassword } from '../../core/passwords';
import { randomToken, sessionDigest } from '../lib/token-format';
import { SESSION_COOKIE } from '../middleware/authenticate';

type SessionActor = Extract<Actor, { kind: 'session' }>;

const WRONG_CREDENTIALS = 'The e-mail address or the password is wrong';

/** Starts a new session row (a new id and secret every time); only the secret's digest is stored. */
export async function startSession(
  deps: Deps,
  userId: string,
  kind: 'browser' | 'cli',
  secret: string,
  db: Knex = deps.knex,
): Promise<Session> {
  const ttlMs =
    kind === 'browser' ? deps.config.session.ttlHours * 3600_000 : deps.config.session.cliTtlDays * 86_400_000;
  return Session.query(db).insertAndFetch({
    secret_digest: sessionDigest(secret),
    user_id: userId,
    kind,
    csrf_token: randomToken(),
    expires_at: new Date(Date.now() + ttlMs),
  });
}

/**
 * POST /session. The same answer for an unknown address and a wrong password, and the same work
 * (a password verification) for both; each counts as a failed credential for the address.
 */
export async function signIn(
  deps: Deps,
  address: string,
  previous: Actor | undefined,
  input: { email: string; password: string },
): Promise<{ user: User; secret: string; session: Session }> {
  await deps.guards.assertAddressAllowed(address);
  const user = await User.query(deps.knex).findOne({ email: input.email });
  const ok = await verifyPassword(user?.password_hash ?? (await dummyHash()), input.password);
  if (!user || !ok) {
    await deps.guards.recordFailure(address);
    throw errors.unauthenticated(WRONG_CREDENTIALS);
  }
  if (!user.email_confirmed_at) {
    throw appError('email_not_confirmed');
  }
  await deps.guards.recordSuccess(address);
  // A browser that signs in again leaves its previous session behind, ended.
  if (previous?.kind === 'session' && previous.via === 'session') await endSession(deps, previous.session.id);
  const secret = randomToken(32);
  const session = await startSession(deps, user.id, 'browser', secret);
  return { user, secret, session };
}

export async function endSession(deps: Deps, sessionId: string): Promise<void> {
  await Session.query(deps.knex).findById(sessionId).whereNull('ended_at').patch({ ended_at: new Date() });
}

/** POST /session/reauthenticate: the password again renews the sign-in time of this session. */
export async function reauthenticate(
  deps: Deps,
  address: string,
  actor: SessionActor,
  input: { password: string },
): Promise<Date> {
  await deps.guards.assertAddressAllowed(address);
  if (!(await verifyPassword(actor.user.password_hash, input.password))) {
    await deps.guards.recordFailure(address);
    throw errors.invalid({ password: 'is not the password of this account' }, 'The password is wrong');
  }
  const now = new Date();
  await Session.query(deps.knex).findById(actor.session.id).patch({ authenticated_at: now });
  return now;
}

/**
 * Ends every browser session of the caller but the one making the request (the spec: "ends every
 * browser session but the current one"). Command-line sessions are left alone: they are ended one by
 * one from the command line (DELETE /session with the bearer).
 */
export async function endOtherSessions(deps: Deps, actor: SessionActor, userId: string): Promise<number> {
  if (userId !== actor.user.id) throw errors.notFound('user');
  return Session.query(deps.knex)
    .where({ user_id: actor.user.id, kind: 'browser' })
    .whereNot({ id: actor.session.id })
    .whereNull('ended_at')
    .patch({ ended_at: new Date() });
}

export function sessionActor(actor: Actor): SessionActor {
  if (actor.kind !== 'session') throw errors.tokenNotAllowed();
  return actor;
}

// ---------------------------------------------------------------------------------------------
// The cookie

function cookieIsSecure(deps: Deps, ctx: Context): boolean {
  return deps.config.baseUrl.startsWith('https:') || ctx.secure;
}

/** HttpOnly, SameSite=Lax, Path=/, Secure on https. Written by hand so Secure works behind a proxy. */
export function setSessionCookie(deps: Deps, ctx: Context, secret: string, expiresAt: Date): void {
  const maxAge = Math.max(0, Math.floor((expiresAt.getTime() - Date.now()) / 1000));
  const parts = [
    `${SESSION_COOKIE}=${secret}`,
    'Path=/',
    `Max-Age=${maxAge}`,
    `Expires=${expiresAt.toUTCString()}`,
    'HttpOnly',
    'SameSite=Lax',
  ];
  if (cookieIsSecure(deps, ctx)) parts.push('Secure');
  ctx.append('Set-Cookie', parts.join('; '));
}

export function clearSessionCookie(deps: Deps, ctx: Context): void {
  const parts = [
    `${SESSION_COOKIE}=`,
    'Path=/',
    'Max-Age=0',
    'Expires=Thu, 01 Jan 1970 00:00:00 GMT',
    'HttpOnly',
    'SameSite=Lax',
  ];
  if (cookieIsSecure(deps, ctx)) parts.push('Secure');
  ctx.append('Set-Cookie', parts.join('; '));
}
