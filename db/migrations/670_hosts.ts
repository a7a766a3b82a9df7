import type { Knex } from 'knex';

/**
 * The host registry (CONTRACT "Hosts"): one row per host agent, written by the agent itself when it starts
 * (the worker process, processes/host-agent.ts) and refreshed by its heartbeat.
 *
 * - `status` holds what an operator or the system set: `ready`, `draining`, `drained`. `lost` is never
 *   stored: it is read as the status of a host whose `heartbeat_at` is older than HOST_LOST_SECONDS
 *   (db/queries/hosts.ts), so a host is lost exactly when its agent stopped heartbeating, on every reader.
 * - `instance_token`: the agent that holds the name (a token kept in its DATA_DIR): the same agent restarted
 *   by its supervisor takes its row again; another agent is refused while the heartbeat is fresh.
 * - `servers.host`: the host a server runs on (placement, issue 26 item 3, records it); null: not placed.
 *   A host's `used` and `environments` are read from it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('hosts', (t) => {
    t.text('name').primary();
    t.text('address').notNullable();
    t.text('status').notNullable().defaultTo('ready').checkIn(['ready', 'draining', 'drained']);
    t.decimal('cpu', 8, 2).notNullable();
    t.integer('memory_mb').notNullable();
    t.integer('disk_gb').notNullable();
    t.specificType('storage_roots', 'text[]').notNullable().defaultTo('{}');
    t.integer('instance_ports_from').notNullable();
    t.integer('instance_ports_to').notNullable();
    t.text('instance_token').notNullable();
    t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('heartbeat_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.alterTable('servers', (t) => {
    t.text('host').references('hosts.name').onUpdate('CASCADE').onDelete('SET NULL');
    t.index(['host']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('servers', (t) => {
    t.dropColumn('host');
  });
  await knex.schema.dropTableIfExists('hosts');
}
