import type { Knex } from 'knex';

/**
 * `tasks.phases`: when each phase of a deploy-like task ended (db/queries/task-phases.ts), an object
 * `{name: ISO time}` merged into as the phases end; `queued` and `started` are the row's created_at and
 * started_at. NULL: nothing recorded (a task of another type, or one that did not get that far).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('tasks', (t) => {
    t.jsonb('phases');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('tasks', (t) => {
    t.dropColumn('phases');
  });
}
