import type { Backup } from '../../db/models/backup';
import { presentBackup } from '../backups/presenter';
import type { EnvironmentRecord } from './service';
import { iso, isoOrNull } from '../../core/time';

/** An environment as the services hand it out: the row plus its public address. */

/**
 * The one presenter of an environment. Other areas add their fields through `extra` (e.g. the deploy
 * state); the internal port and live release id stay out of it unless an area adds them on purpose.
 */
export function presentEnvironment(env: EnvironmentRecord, extra: Record<string, unknown> = {}) {
  return {
    id: env.id,
    project_id: env.project_id,
    team_id: env.team_id,
    name: env.name,
    git_ref: env.git_ref,
    auto_deploy: env.auto_deploy,
    url: env.url,
    protected: env.protected ?? false,
    created_at: iso(env.created_at),
    maintenance: {
      on: env.maintenance_on ?? false,
      note: env.maintenance_note ?? null,
      since: isoOrNull(env.maintenance_since),
    },
    ...extra,
  };
}

/** A deleted environment still kept, with its snapshots (any may be restored into another environment). */
export function presentDeletedEnvironment(e: {
  id: string;
  name: string;
  protected: boolean;
  deleted_at: Date;
  kept_until: Date;
  snapshots: Backup[];
}) {
  return {
    id: e.id,
    name: e.name,
    protected: e.protected,
    deleted_at: iso(e.deleted_at),
    kept_until: iso(e.kept_until),
    snapshots: e.snapshots.map(presentBackup),
  };
}
