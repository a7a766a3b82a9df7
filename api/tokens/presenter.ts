import type { AccessToken } from '../../db/models/access-token';
import type { TokenView } from './schemas';

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** The token record as its issuer sees it: never the digest, the key id or the string. */
export function presentToken(token: AccessToken, now = new Date()): TokenView {
  return {
    id: token.id,
    purpose: token.purpose,
    team_id: token.team_id,
    status: token.statusAt(now),
    created_at: iso(token.created_at)!,
    expires_at: iso(token.expires_at)!,
    last_used_at: iso(token.last_used_at),
    revoked_at: iso(token.revoked_at),
  };
}
