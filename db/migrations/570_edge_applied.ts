import type { Knex } from 'knex';

/**
 * `edge_instances.applied_at`: the database clock when the edge last read the state it now serves (HAProxy
 * holds it). A deploy switch or a maintenance switch waits until every live edge has applied a state read
 * after its change (db/queries/edge-routes.ts `awaitEdges`), so it never succeeds while a stale release or
 * page is still served.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('edge_instances', (t) => {
    t.timestamp('applied_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('edge_instances', (t) => {
    t.dropColumn('applied_at');
  });
}
