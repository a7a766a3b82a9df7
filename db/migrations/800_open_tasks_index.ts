import type { Knex } from 'knex';

/**
 * The open tasks (pending or running) in order of `seq`: the orphan check (db/queries/tasks.ts openTasksAfter)
 * reads a few after a cursor every round, and without this index it would walk every finished task's seq on its
 * way. Small: it holds only the open tasks.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `CREATE INDEX IF NOT EXISTS tasks_open_seq_index ON tasks (seq) WHERE status IN ('pending', 'running')`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS tasks_open_seq_index');
}
