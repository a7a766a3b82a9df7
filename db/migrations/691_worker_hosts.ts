import type { Knex } from 'knex';

/**
 * Which host each ready worker is (HOST_NAME), beside what it found about that host's settings (migration 550):
 * a database service is refused with `services_unreachable` naming the host of the environment whose sandboxes
 * cannot reach the services server, as that host's own worker found it (docs/hosts.md). Null: a worker of
 * before.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('worker_heartbeats', (t) => {
    t.text('host');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('worker_heartbeats', (t) => {
    t.dropColumn('host');
  });
}
