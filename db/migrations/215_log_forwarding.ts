import type { Knex } from 'knex';

/**
 * Log forwarding (CONTRACT "Logs"): one row per project that has set anything. No row: no destination,
 * machines keep 7 days. An http destination's URL may carry credentials (userinfo, a token in the query):
 * it is kept sealed (system/crypto.ts, aad `project_logs:<project id>`); syslog host/port are not secret.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('project_log_settings', (t) => {
    t.uuid('project_id').primary().references('projects.id').onDelete('CASCADE');
    /** null: no destination; 'http' | 'syslog'. */
    t.text('kind');
    t.text('name');
    t.text('url_sealed');
    t.text('host');
    t.integer('port');
    /** 'udp' | 'tcp' */
    t.text('protocol');
    t.boolean('can_send').notNullable().defaultTo(false);
    t.timestamp('last_sent_at', { useTz: true });
    t.text('last_error');
    t.integer('keep_days_on_machine').notNullable().defaultTo(7);
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('project_log_settings');
}
