/**
 * Changes that need a recent sign-in only in some cases (a protected environment's deletion), checked by the
 * service once it knows; a route that always needs one says so with `recentSignInMinutes` instead.
 */
import type { Actor } from '../../core/actor';
import { errors } from '../../core/errors';

/** Deleting a protected environment: the sign-in (or its renewal, POST /session/reauthenticate) this recent. */
export const DELETE_PROTECTED_SIGN_IN_MINUTES = 15;

/** 403 reauthentication_required unless the caller signed in (or re-authenticated) within `minutes`. */
export function assertRecentSignIn(actor: Actor, minutes: number): void {
  if (actor.kind !== 'session') throw errors.tokenNotAllowed();
  if (Date.now() - actor.session.authenticated_at.getTime() > minutes * 60_000) throw errors.reauthenticationRequired();
}
