import type { Knex } from 'knex';

/**
 * The team's surface (issue 11):
 * - billing_details: one row a team, the address in its country's fields (api/billing/address-format.ts);
 * - subscriptions: every paid thing is one order; cancelling keeps it until the end of its period, when a
 *   Temporal timer (workflows/subscriptions.ts) ends it;
 * - integrations and their deliveries (one workflow a delivery); the secret part of an integration
 *   (a webhook's signing key, a Slack URL) is sealed;
 * - team_member_state: per user and team, when they last looked at the activity and whether the next
 *   steps are hidden.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('billing_details', (t) => {
    t.uuid('team_id').primary().references('teams.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('email').notNullable();
    t.string('country', 2).notNullable();
    t.text('vat_id');
    t.jsonb('address').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('subscriptions', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('order').notNullable().unique();
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('project_id').references('projects.id').onDelete('SET NULL');
    t.uuid('environment_id').references('environments.id').onDelete('SET NULL');
    t.text('kind').notNullable();
    t.text('resource_id');
    t.text('item').notNullable();
    t.decimal('monthly_price', 12, 2).notNullable();
    t.string('currency', 3).notNullable();
    t.text('status').notNullable().defaultTo('active');
    t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('cancel_at', { useTz: true });
    t.uuid('cancelled_by').references('users.id').onDelete('SET NULL');
    t.timestamp('ended_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['team_id', 'status']);
  });
  await knex.raw(
    `ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_status_check CHECK (status IN ('active', 'cancelling', 'ended'))`,
  );
  await knex.schema.createTable('integrations', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.text('kind').notNullable();
    t.text('name').notNullable();
    t.specificType('events', 'text[]').notNullable();
    t.jsonb('config').notNullable().defaultTo('{}');
    t.text('sealed_secret').notNullable();
    t.uuid('created_by').references('users.id').onDelete('SET NULL');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['team_id']);
  });
  await knex.schema.createTable('integration_deliveries', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('integration_id').notNullable().references('integrations.id').onDelete('CASCADE');
    t.text('event_id').notNullable();
    t.text('event').notNullable();
    t.jsonb('payload').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.integer('attempts').notNullable().defaultTo(0);
    t.integer('response_status');
    t.text('last_error');
    t.timestamp('last_attempt_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['integration_id', 'event_id']);
    t.index(['integration_id', 'created_at']);
  });
  await knex.schema.createTable('team_member_state', (t) => {
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.timestamp('activity_seen_at', { useTz: true });
    t.timestamp('next_steps_hidden_at', { useTz: true });
    t.primary(['team_id', 'user_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'team_member_state',
    'integration_deliveries',
    'integrations',
    'subscriptions',
    'billing_details',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
