import type { Knex } from 'knex';

/**
 * Scale (CONTRACT "Machines"): how many web instances an environment's `web` server runs (`instances`,
 * priced per instance), and every instance's address in `edge_routes.upstreams` (`[{id, host, port}]`,
 * slot 1 first) so that the edge balances over them and keeps a client on one with the stickiness cookie.
 * `upstream_host`/`upstream_port` stay slot 1's, for readers of one upstream.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('servers', (t) => {
    t.integer('instances').notNullable().defaultTo(1);
  });
  await knex.raw('ALTER TABLE servers ADD CONSTRAINT servers_instances_positive CHECK (instances >= 1)');
  await knex.schema.alterTable('edge_routes', (t) => {
    t.jsonb('upstreams');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('edge_routes', (t) => {
    t.dropColumn('upstreams');
  });
  await knex.schema.alterTable('servers', (t) => {
    t.dropColumn('instances');
  });
}
