import type { AccessToken } from '../../db/models/access-token';
import type { TokenView } from './schemas';
import { iso, isoOrNull } from '../../core/time';

/** The token record as its issuer sees it: never the digest, the key id or the string. */
export function presentToken(token: AccessToken, now = new Date()): TokenView {
  return {
    id: token.id,
    purpose: token.purpose,
    team_id: token.team_id,
    status: token.statusAt(now),
    created_at: iso(token.created_at),
    expires_at: iso(token.expires_at),
    last_used_at: isoOrNull(token.last_used_at),
    revoked_at: isoOrNull(token.revoked_at),
  };
}
