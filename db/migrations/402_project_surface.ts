import type { Knex } from 'knex';

/**
 * A project's registries (credentials sealed), its notification rules (who hears of what), and the
 * acceptances of its terms.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('project_registries', (t) => {
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('host').notNullable();
    t.text('username').notNullable();
    t.text('sealed_password').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['project_id', 'host']);
  });
  await knex.schema.createTable('project_notification_rules', (t) => {
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('event').notNullable();
    t.text('email').notNullable().checkIn(['members', 'admins', 'none']);
    t.specificType('integration_ids', 'uuid[]').notNullable().defaultTo('{}');
    t.primary(['project_id', 'event']);
  });
  await knex.schema.createTable('project_terms_acceptances', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('version').notNullable();
    t.uuid('user_id').references('users.id').onDelete('SET NULL');
    t.timestamp('accepted_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['project_id', 'accepted_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['project_terms_acceptances', 'project_notification_rules', 'project_registries'])
    await knex.schema.dropTableIfExists(table);
}
