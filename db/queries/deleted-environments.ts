/**
 * Deleted environments (CONTRACT "Running"): deleting an environment removes its row and what hangs on it,
 * and leaves a tombstone (name, backup key) beside its tasks, activity events and snapshots, which stay for
 * DELETED_ENVIRONMENT_KEEP_DAYS; the daily prune removes them after (activities/maintenance/deleted-environments.ts).
 */
import type { Knex } from 'knex';

export const DELETED_ENVIRONMENT_KEEP_DAYS = 30;
const DAY_MS = 86_400_000;

/** The instant before which a tombstone is past keeping, as of `asOf`. */
const keptSince = (asOf: Date) => new Date(asOf.getTime() - DELETED_ENVIRONMENT_KEEP_DAYS * DAY_MS);

/**
 * Deletes the environment's row inside `trx` (the caller has locked it and checked nothing runs there), leaving
 * its tombstone: its subscriptions end, its port is held in retiring_ports until its sandbox is gone.
 * Returns the port and the service databases (with those a reshape left) to drop once committed.
 */
export async function tombstoneEnvironment(
  trx: Knex.Transaction,
  id: string,
  deletedBy: string | null,
): Promise<
  | { port: number; databases: string[]; name: string; team_id: string; project_id: string; host: string | null }
  | undefined
> {
  const env = await trx('environments').where({ id }).forUpdate().first();
  if (!env) return undefined;
  const rows = await trx('services')
    .where({ environment_id: id })
    .select('database_name', 'old_database_name', 'next_database_name');
  const databases: string[] = rows.flatMap((r) =>
    [r.database_name, r.old_database_name, r.next_database_name].filter(Boolean),
  );
  // What the environment paid for (its servers' plans, services, storage) goes with it: billed no more.
  await trx('subscriptions')
    .where({ environment_id: id })
    .whereIn('status', ['active', 'cancelling'])
    .update({ status: 'ended', ended_at: trx.fn.now() });
  await trx('deleted_environments')
    .insert({
      id,
      team_id: env.team_id,
      project_id: env.project_id,
      name: env.name,
      protected: env.protected,
      backup_key_sealed: env.backup_key_sealed,
      deleted_by_user_id: deletedBy,
      created_at: env.created_at,
    })
    .onConflict('id')
    .ignore();
  // the host its web server was placed on (its servers go with it): its processes are retired there
  const web = await trx('servers').where({ environment_id: id, role: 'web' }).first('host');
  await trx('environments').where({ id }).delete();
  // Held until the sandbox is gone: its uid and network derive from the port.
  await trx('retiring_ports').insert({ port: env.port, environment_id: id }).onConflict('port').ignore();
  return {
    port: env.port as number,
    databases,
    name: env.name,
    team_id: env.team_id,
    project_id: env.project_id,
    host: (web?.host as string | null | undefined) ?? null,
  };
}

/** The project's deleted environments still kept as of `asOf`, newest first. */
export function keptDeletedEnvironments(knex: Knex, projectId: string, asOf = new Date()) {
  return knex('deleted_environments')
    .where({ project_id: projectId })
    .where('deleted_at', '>', keptSince(asOf))
    .orderBy([
      { column: 'deleted_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .select('id', 'name', 'protected', 'deleted_at');
}

/** Whether `environmentId` is a kept deleted environment of the project. */
export async function isKeptDeletedEnvironment(knex: Knex, projectId: string, environmentId: string) {
  const row = await knex('deleted_environments')
    .where({ id: environmentId, project_id: projectId })
    .where('deleted_at', '>', keptSince(new Date()))
    .first('id');
  return Boolean(row);
}

/** The tombstones whose keeping has ended as of `asOf` (the daily prune removes them). */
export async function tombstonesPastKeeping(knex: Knex, asOf: Date): Promise<Array<{ id: string }>> {
  return knex('deleted_environments').where('deleted_at', '<=', keptSince(asOf)).select('id');
}

/** Removes the tombstone (its backup key with it); inside the prune's transaction. */
export async function deleteTombstone(trx: Knex.Transaction, id: string): Promise<void> {
  await trx('deleted_environments').where({ id }).delete();
}

/** The sealed backup key the environment's tombstone kept (null: no tombstone, or it kept none). */
export async function tombstoneBackupKey(knex: Knex, environmentId: string): Promise<string | null> {
  const kept = await knex('deleted_environments').where({ id: environmentId }).first('backup_key_sealed');
  return (kept?.backup_key_sealed as string | null | undefined) ?? null;
}

/** The environment's sandbox is gone from its host: its port is free for a new environment. */
export async function releaseRetiringPort(knex: Knex, port: number, environmentId: string): Promise<void> {
  await knex('retiring_ports').where({ port, environment_id: environmentId }).delete();
}

/** The ports still held for deleted environments more than a minute ago (what no worker has retired yet). */
export async function retiringPortsLeft(knex: Knex): Promise<Array<{ environmentId: string; port: number }>> {
  return knex('retiring_ports')
    .select({ environmentId: 'environment_id', port: 'port' })
    .where('created_at', '<', knex.raw("now() - interval '1 minute'"));
}
