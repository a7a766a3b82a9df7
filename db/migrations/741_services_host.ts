import type { Knex } from 'knex';

/**
 * `hosts.runs_services`: the host whose machine runs the services server (the tenants' PostgreSQL, with its
 * WAL archive): npm start's own host, marked by its worker when it registers. The work on that server's files
 * (a `database` disk's move, the archive's backups, point-in-time restores, restore drills) goes to its queue
 * (workflows/host-queue.ts `onServicesHost`). At most one host holds it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('hosts', (t) => {
    t.boolean('runs_services').notNullable().defaultTo(false);
  });
  await knex.raw('CREATE UNIQUE INDEX hosts_runs_services ON hosts (runs_services) WHERE runs_services');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('hosts', (t) => {
    t.dropColumn('runs_services');
  });
}
