/**
 * A project's deleted environments (CONTRACT "Running"): each kept DELETED_ENVIRONMENT_KEEP_DAYS with its
 * snapshots, which may be restored into another environment of the project
 * (POST /environments/{target}/backups/{snapshot}/restore, api/backups/task-service.ts).
 */
import type { Deps } from '../../system/deps';
import { Backup } from '../../db/models/backup';
import { DELETED_ENVIRONMENT_KEEP_DAYS, keptDeletedEnvironments } from '../../db/queries/deleted-environments';

const DAY_MS = 86_400_000;

export async function listDeletedEnvironments(deps: Deps, projectId: string) {
  const rows = await keptDeletedEnvironments(deps.knex, projectId);
  const snapshots = rows.length
    ? await Backup.query(deps.knex)
        .whereIn(
          'environment_id',
          rows.map((r) => r.id),
        )
        .orderBy([
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
    : [];
  return rows.map((r) => ({
    id: r.id as string,
    name: r.name as string,
    protected: r.protected as boolean,
    deleted_at: new Date(r.deleted_at),
    kept_until: new Date(new Date(r.deleted_at).getTime() + DELETED_ENVIRONMENT_KEEP_DAYS * DAY_MS),
    snapshots: snapshots.filter((b) => b.environment_id === r.id),
  }));
}
