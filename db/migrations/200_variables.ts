import type { Knex } from 'knex';

/**
 * Variables of a project (environment_id null) and of its environments. `value_sealed` is the value sealed
 * with the console's encryption key (system/crypto.ts), its aad binding it to the scope and the name, so a
 * sealed value copied to another row does not open there. A name is unique in its scope.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('variables', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.uuid('environment_id').references('environments.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('value_sealed').notNullable();
    t.boolean('secret').notNullable().defaultTo(false);
    t.timestamps(true, true);
  });
  await knex.raw(
    'CREATE UNIQUE INDEX variables_project_name ON variables (project_id, name) WHERE environment_id IS NULL',
  );
  await knex.raw(
    'CREATE UNIQUE INDEX variables_environment_name ON variables (environment_id, name) WHERE environment_id IS NOT NULL',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('variables');
}
