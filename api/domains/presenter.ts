import type { Domain } from '../../db/models/domain';
import { VERIFY_PREFIX } from '../../db/queries/domains';
import { iso, isoOrNull } from '../lib/time';

/** `checksLeft`: POST /domains/{id}/verify calls left this hour for the hostname by the domain's team. */
export function presentDomain(d: Domain, checksLeft: number) {
  return {
    id: d.id,
    environment_id: d.environment_id,
    hostname: d.hostname,
    status: d.status,
    verification: {
      type: 'TXT' as const,
      name: `${VERIFY_PREFIX}${d.hostname}`,
      value: d.verification_value,
      checks_left: checksLeft,
    },
    verified_at: isoOrNull(d.verified_at),
    last_checked_at: isoOrNull(d.last_checked_at),
    created_at: iso(d.created_at),
  };
}
