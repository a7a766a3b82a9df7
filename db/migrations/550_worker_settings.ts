import type { Knex } from 'knex';

/**
 * What a worker found about the host's settings when it started (db/queries/worker-settings.ts): whether
 * sandboxed environments can traverse to their storage roots and reach the services server. GET /health
 * reports it and creating a database service on an unreachable server is refused with it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('worker_heartbeats', (t) => {
    t.jsonb('settings');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('worker_heartbeats', (t) => {
    t.dropColumn('settings');
  });
}
