import type { Knex } from 'knex';

/**
 * The size of each task's log so far, so that the cap (TASK_LOG_LIMIT_BYTES) holds across the
 * activities and retries of one task, whichever worker writes (activities/toolkit/task-log.ts).
 * `bytes`: what the log keeps (UTF-8); `dropped`: output refused beyond the cap; `marker_seq`: the
 * task_logs chunk that says so (updated with the count as more is dropped).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('task_log_sizes', (t) => {
    t.uuid('task_id').primary().references('tasks.id').onDelete('CASCADE');
    t.bigInteger('bytes').notNullable().defaultTo(0);
    t.bigInteger('dropped').notNullable().defaultTo(0);
    t.integer('marker_seq');
  });
  await knex.raw(`
    INSERT INTO task_log_sizes (task_id, bytes)
    SELECT task_id, sum(octet_length(chunk)) FROM task_logs GROUP BY task_id
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('task_log_sizes');
}
