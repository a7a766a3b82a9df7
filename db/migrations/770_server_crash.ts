import type { Knex } from 'knex';

/**
 * `servers.crash`: while a live web process keeps exiting and is restarted by its host's supervisor, what the
 * host last saw of it (`{since, exit_code, signal, exits, last_exit_at}`); null once every instance has stayed up
 * for the restart backoff's steady time, or a new release went live. Apart from `status`, which is the server's
 * own lifecycle (resizing, rebooting, host_lost).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('servers', (t) => {
    t.jsonb('crash');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('servers', (t) => {
    t.dropColumn('crash');
  });
}
