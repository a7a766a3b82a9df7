import type { Domain } from '../../db/models/domain';
import { VERIFY_PREFIX } from '../../db/queries/domains';
import { iso, isoOrNull } from '../lib/time';

export function presentDomain(d: Domain) {
  return {
    id: d.id,
    environment_id: d.environment_id,
    hostname: d.hostname,
    status: d.status,
    verification: { type: 'TXT' as const, name: `${VERIFY_PREFIX}${d.hostname}`, value: d.verification_value },
    verified_at: isoOrNull(d.verified_at),
    last_checked_at: isoOrNull(d.last_checked_at),
    created_at: iso(d.created_at),
  };
}
