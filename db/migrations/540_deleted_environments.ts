import type { Knex } from 'knex';

/**
 * Deleted environments (CONTRACT "Running"): a deleted environment leaves a tombstone with its name and its
 * backup key, and its tasks, activity events and snapshots stay for 30 days (the daily prune removes them
 * after, with the snapshots' objects). So those three tables no longer hang on the environments row: their
 * environment_id names a live environment or a tombstone; a project or team going still takes them along.
 */
const KEPT = ['tasks', 'backups', 'activity_events'] as const;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('deleted_environments', (t) => {
    t.uuid('id').primary(); // the environment's own id
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.boolean('protected').notNullable().defaultTo(false);
    t.text('backup_key_sealed'); // sealed as it was, bound to the environment's id
    t.uuid('deleted_by_user_id').references('users.id').onDelete('SET NULL');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('deleted_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['project_id', 'deleted_at']);
    t.index(['deleted_at']);
  });
  for (const table of KEPT) {
    await knex.raw(`ALTER TABLE ${table} DROP CONSTRAINT IF EXISTS ${table}_environment_id_foreign`);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of KEPT) {
    await knex(table)
      .whereNotNull('environment_id')
      .whereNotExists((q) =>
        q.select(knex.raw('1')).from('environments').whereRaw(`environments.id = ${table}.environment_id`),
      )
      .delete();
  }
  await knex.schema.alterTable('tasks', (t) => {
    t.foreign('environment_id').references('environments.id').onDelete('CASCADE');
  });
  await knex.schema.alterTable('backups', (t) => {
    t.foreign('environment_id').references('environments.id').onDelete('CASCADE');
  });
  await knex.schema.alterTable('activity_events', (t) => {
    t.foreign('environment_id').references('environments.id').onDelete('SET NULL');
  });
  await knex.schema.dropTableIfExists('deleted_environments');
}
