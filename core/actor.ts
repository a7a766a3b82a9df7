import type { User } from '../db/models/user';
import type { Session } from '../db/models/session';
import type { AccessToken } from '../db/models/access-token';
import type { Membership } from '../db/models/membership';

/** Who is calling, and how. Set by the authentication middleware on ctx.state.actor. */
export type Actor =
  | { kind: 'session'; via: 'session' | 'cli'; user: User; session: Session }
  /**
   * A personal access token: its issuer, and the issuer's membership in the token's one team as read
   * when the request was authenticated (the current role at request time).
   */
  | { kind: 'token'; via: 'token'; user: User; token: AccessToken; membership: Membership };

/**
 * The caller's role per team, read at most once per request (the router's permission check and a
 * service's own check share it). Kept beside the actor object, which lives for one request.
 */
const rolesOf = new WeakMap<Actor, Map<string, string | null>>();
export function requestRoles(actor: Actor): Map<string, string | null> {
  let m = rolesOf.get(actor);
  if (!m) rolesOf.set(actor, (m = new Map()));
  return m;
}
