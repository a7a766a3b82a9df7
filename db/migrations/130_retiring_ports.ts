import type { Knex } from 'knex';

/**
 * The port of a deleted environment until its sandbox is taken off the host (processes, network, files:
 * the retireEnvironment workflow). Its uid and network namespace derive from the port, so no new
 * environment gets the port while a row is here.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('retiring_ports', (t) => {
    t.integer('port').primary();
    t.uuid('environment_id').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('retiring_ports');
}
