import type { Knex } from 'knex';

/**
 * The instance ports a host hands out (issue 26 item 5, docs/hosts.md "The edge across hosts"): each running
 * web instance holds one port of its host's INSTANCE_PORTS, on which the edge reaches it (`HOST_ADDRESS:port`,
 * forwarded into the sandbox by the host's agent). A row is written when the instance starts and deleted when
 * it stops; a worker that starts deletes its host's rows that no instance holds any more. No foreign keys: the
 * agent that owns the rows cleans them up, whatever happened to its host's row or the environment.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('instance_ports', (t) => {
    t.text('host').notNullable();
    t.integer('port').notNullable();
    t.text('environment_id').notNullable();
    t.integer('slot').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['host', 'port']);
    t.index(['environment_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('instance_ports');
}
