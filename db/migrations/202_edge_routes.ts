import type { Knex } from 'knex';

/**
 * What the edge (processes/edge.ts, its own process) serves, written by the supervisor when a release goes
 * live, restarts or stops: per environment, the upstream address of its web process (host AND port: the
 * host may be a network namespace's veth address) or why there is none. Every change of a table the edge
 * reads is announced on the `vc_edge` channel (LISTEN/NOTIFY), so the edge refreshes at once.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('edge_routes', (t) => {
    t.uuid('environment_id').primary().references('environments.id').onDelete('CASCADE');
    t.text('upstream_host');
    t.integer('upstream_port');
    t.uuid('release_id');
    /** Why nothing answers (no web process, ...) when there is no upstream. */
    t.text('unavailable');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`
    CREATE OR REPLACE FUNCTION vc_edge_notify() RETURNS trigger AS $$
    BEGIN
      PERFORM pg_notify('vc_edge', TG_TABLE_NAME);
      RETURN NULL;
    END $$ LANGUAGE plpgsql`);
  for (const table of ['environments', 'domains', 'edge_routes']) {
    await knex.raw(
      `CREATE TRIGGER ${table}_vc_edge AFTER INSERT OR UPDATE OR DELETE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION vc_edge_notify()`,
    );
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['environments', 'domains', 'edge_routes'])
    await knex.raw(`DROP TRIGGER IF EXISTS ${table}_vc_edge ON ${table}`);
  await knex.schema.dropTableIfExists('edge_routes');
  await knex.raw('DROP FUNCTION IF EXISTS vc_edge_notify()');
}
