import type { Knex } from 'knex';

/**
 * Build capacity across the system (activities/deploys/build-gate.ts): a task whose build waits for one of
 * the BUILD_CONCURRENCY slots has a row here until a slot takes it. Slots go in request order (task_seq,
 * the task's tasks.seq): only the oldest waiting task may take a free slot. `seen_at` is refreshed by the
 * waiting activity at every poll; a row not seen for a while (its worker died and no retry came back yet)
 * does not hold the queue up. The slots themselves are session-level advisory locks, not rows.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('build_queue', (t) => {
    t.uuid('task_id').primary().references('tasks.id').onDelete('CASCADE');
    t.bigInteger('task_seq').notNullable();
    t.timestamp('enqueued_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['task_seq']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('build_queue');
}
