import type { Knex } from 'knex';

/**
 * `edge_instances.held_ports`: the ports of ENVIRONMENT_PORTS that another program on the edge's host held when it
 * last applied a state; the edge leaves them out of HAProxy's bind and binds each once it is free
 * (edge/control-plane.ts). An environment on such a port is not served by that edge: a task that waits for the edges
 * on behalf of that environment (db/queries/edge-routes.ts `awaitEdges`) counts the edge as behind until it binds
 * the port, so a deploy never reports an environment live where it is not.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('edge_instances', (t) => {
    t.specificType('held_ports', 'integer[]').notNullable().defaultTo('{}');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('edge_instances', (t) => {
    t.dropColumn('held_ports');
  });
}
