import type { Service } from '../../db/models/service';
import { iso } from '../../core/time';

/** A database service of an environment. */
export function presentService(row: Service) {
  return {
    id: row.id,
    kind: row.kind,
    version: row.version,
    plan: row.plan,
    status: row.status,
    server_id: row.server_id,
    created_at: iso(row.created_at),
  };
}
