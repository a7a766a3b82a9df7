import type { User } from '../../db/models/user';
import type { Session } from '../../db/models/session';
import type { AccessToken } from '../../db/models/access-token';

/** Who is calling, and how. Set by the authentication middleware on ctx.state.actor. */
export type Actor =
  | { kind: 'session'; via: 'session' | 'cli'; user: User; session: Session }
  | { kind: 'token'; via: 'token'; user: User; token: AccessToken };

export function isToken(actor: Actor): actor is Extract<Actor, { kind: 'token' }> {
  return actor.kind === 'token';
}
