/**
 * Snapshots (`backups`): the activities take, restore and prune them; what the API and core read and write of
 * them (deleting one, what a backup key or a destination holds, a restore drill's outcome) is here.
 */
import type { Knex } from 'knex';

/** Deletes the snapshot's row, inside the caller's transaction. */
export async function deleteSnapshotRow(trx: Knex.Transaction, id: string): Promise<void> {
  await trx('backups').where({ id }).delete();
}

/** The environment's available snapshots taken under the backup key with this fingerprint: how many, oldest, newest. */
export async function snapshotsUnderKey(
  knex: Knex,
  environmentId: string,
  fingerprint: string,
): Promise<{ snapshots: number; oldest: Date | null; newest: Date | null }> {
  return (await knex('backups')
    .where({ environment_id: environmentId, status: 'available', key_fingerprint: fingerprint })
    .first(
      knex.raw('count(*)::int AS snapshots'),
      knex.raw('min(created_at) AS oldest'),
      knex.raw('max(created_at) AS newest'),
    )) as { snapshots: number; oldest: Date | null; newest: Date | null };
}

/** The available snapshots at the destination: how many, and their bytes (a bigint, as text). */
export async function destinationUsage(
  knex: Knex,
  destinationId: string,
): Promise<{ snapshots: number; used: string }> {
  return (await knex('backups')
    .where({ destination_id: destinationId, status: 'available' })
    .first(knex.raw('count(*)::int AS snapshots'), knex.raw('coalesce(sum(size_bytes), 0)::bigint AS used'))) as {
    snapshots: number;
    used: string;
  };
}

/** A drill passed: the snapshot is verified now, and its last error is cleared. */
export async function recordDrillPassed(knex: Knex, backupId: string): Promise<void> {
  await knex('backups').where({ id: backupId }).update({ verified_at: knex.fn.now(), verify_error: null });
}

/** A drill failed: the snapshot keeps why (inside the caller's transaction). */
export async function recordDrillError(trx: Knex.Transaction, backupId: string, reason: string): Promise<void> {
  await trx('backups').where({ id: backupId }).update({ verified_at: trx.fn.now(), verify_error: reason });
}

/** What a failed drill's events say of its snapshot: the snapshot, its environment's and project's names. */
interface DrilledSnapshot {
  id: string;
  team_id: string;
  project_id: string;
  environment_id: string;
  created_at: Date;
  environment_name: string;
  project_name: string;
}

export async function drilledSnapshot(knex: Knex, backupId: string): Promise<DrilledSnapshot | undefined> {
  return knex('backups as b')
    .join('environments as en', 'en.id', 'b.environment_id')
    .join('projects as p', 'p.id', 'b.project_id')
    .where('b.id', backupId)
    .first(
      'b.id',
      'b.team_id',
      'b.project_id',
      'b.environment_id',
      'b.created_at',
      'en.name as environment_name',
      'p.name as project_name',
    );
}
