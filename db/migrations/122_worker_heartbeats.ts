import type { Knex } from 'knex';

/**
 * Each running worker process: a row it writes once it is ready (schedules ensured, environments'
 * web processes restored) and refreshes every few seconds, deleted when it stops cleanly.
 * `npm start` waits for its worker's row; GET /health reports whether any worker is alive.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('worker_heartbeats', (t) => {
    t.text('identity').primary();
    t.text('task_queue').notNullable();
    t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('ready_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['seen_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('worker_heartbeats');
}
