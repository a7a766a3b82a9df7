import type { Knex } from 'knex';

/**
 * The CDN of each environment (CONTRACT "The edge"): its settings, the purges `cdn/clear` records, and the
 * running edges, each with the last purge it has applied (so a `cdn_clear` task succeeds only once every
 * live edge has dropped what it cached). The settings and purges are announced on `vc_edge`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('environment_cdns', (t) => {
    t.uuid('environment_id').primary().references('environments.id').onDelete('CASCADE');
    t.boolean('enabled').notNullable().defaultTo(false);
    t.integer('default_ttl_seconds').notNullable().defaultTo(3600);
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('cdn_purges', (t) => {
    t.bigIncrements('id').primary();
    t.uuid('environment_id').notNullable().references('environments.id').onDelete('CASCADE');
    /** The task that asked for it; one purge per task, so a retried activity records it once. */
    t.uuid('task_id').unique();
    /** Path prefixes; empty: everything of the environment. */
    t.jsonb('prefixes').notNullable().defaultTo('[]');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('edge_instances', (t) => {
    t.uuid('id').primary();
    t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    /** The last time the edge checked for purges (its heartbeat). */
    t.timestamp('seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    /** The highest cdn_purges.id it has applied. */
    t.bigInteger('purge_seq').notNullable().defaultTo(0);
  });
  for (const table of ['environment_cdns', 'cdn_purges'])
    await knex.raw(
      `CREATE TRIGGER ${table}_vc_edge AFTER INSERT OR UPDATE OR DELETE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION vc_edge_notify()`,
    );
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['environment_cdns', 'cdn_purges'])
    await knex.raw(`DROP TRIGGER IF EXISTS ${table}_vc_edge ON ${table}`);
  await knex.schema.dropTableIfExists('edge_instances');
  await knex.schema.dropTableIfExists('cdn_purges');
  await knex.schema.dropTableIfExists('environment_cdns');
}
