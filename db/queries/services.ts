/**
 * An environment's services (its database): the activities create, reshape and drop them; what the API and
 * core read of them (is there one to reset, move or measure, and its database's name) is here.
 */
import type { Knex } from 'knex';

/** Whether the environment has an available service, of any kind. */
export async function hasAvailableService(knex: Knex, environmentId: string): Promise<boolean> {
  return Boolean(await knex('services').where({ environment_id: environmentId, status: 'available' }).first('id'));
}

/** Whether the environment has an available postgresql service. */
export async function hasPostgresqlService(knex: Knex, environmentId: string): Promise<boolean> {
  return Boolean(
    await knex('services')
      .where({ environment_id: environmentId, kind: 'postgresql', status: 'available' })
      .first('id'),
  );
}

/** The database name of the environment's available postgresql service, or undefined without one. */
export async function postgresqlDatabaseName(knex: Knex, environmentId: string): Promise<string | undefined> {
  const row = await knex('services')
    .where({ environment_id: environmentId, kind: 'postgresql', status: 'available' })
    .first('database_name');
  return row?.database_name as string | undefined;
}
