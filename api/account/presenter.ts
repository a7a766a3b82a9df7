import type { User } from '../../db/models/user';
import type { SshKey } from '../../db/models/ssh-key';
import type { Actor } from '../../core/actor';
import { iso } from '../../core/time';

/** The account as the API shows it: never the password hash. */
export function presentUser(user: User) {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    email_confirmed: user.email_confirmed_at !== null && user.email_confirmed_at !== undefined,
    created_at: iso(user.created_at),
  };
}

/** GET /me: the caller, how they came in, and for a personal access token its record (never the string). */
export function presentMe(actor: Actor) {
  const base = { ...presentUser(actor.user), via: actor.via };
  if (actor.kind !== 'token') return base;
  const t = actor.token;
  return { ...base, token: { id: t.id, team_id: t.team_id, purpose: t.purpose, expires_at: iso(t.expires_at) } };
}

export function presentSshKey(key: SshKey) {
  return {
    id: key.id,
    name: key.name,
    key_type: key.key_type,
    public_key: key.public_key,
    fingerprint: key.fingerprint,
    created_at: iso(key.created_at),
  };
}
