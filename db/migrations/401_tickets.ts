import type { Knex } from 'knex';

/** Support tickets, their attachments (images, checked by content, kept in the database) and replies. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tickets', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('environment_id').references('environments.id').onDelete('SET NULL');
    t.uuid('opened_by').references('users.id').onDelete('SET NULL');
    t.text('subject').notNullable();
    t.text('body').notNullable();
    t.text('category').notNullable();
    t.text('status').notNullable().defaultTo('open').checkIn(['open', 'resolved']);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('resolved_at', { useTz: true });
    t.index(['team_id', 'created_at']);
  });
  await knex.schema.createTable('ticket_attachments', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('ticket_id').notNullable().references('tickets.id').onDelete('CASCADE');
    t.integer('position').notNullable();
    t.text('name').notNullable();
    t.text('type').notNullable();
    t.integer('bytes').notNullable();
    t.binary('content').notNullable();
  });
  await knex.schema.createTable('ticket_replies', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('ticket_id').notNullable().references('tickets.id').onDelete('CASCADE');
    t.uuid('user_id').references('users.id').onDelete('SET NULL');
    t.text('body').notNullable();
    t.boolean('resolved').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['ticket_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['ticket_replies', 'ticket_attachments', 'tickets']) await knex.schema.dropTableIfExists(table);
}
