import type { Knex } from 'knex';

/**
 * Custom domains of environments. `hostname` is unique across the whole system (one environment serves a
 * name); `verification_value` is what the TXT record `_vc-verify.<hostname>` must hold. Each
 * POST /domains/{id}/verify is a row of `domain_verify_calls` (12 an hour per domain; the background
 * re-checks are not counted). `projects.domain_allowance` is the project's own allowance (null: the
 * DOMAIN_ALLOWANCE default).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('domains', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.uuid('environment_id').notNullable().references('environments.id').onDelete('CASCADE');
    t.text('hostname').notNullable().unique();
    t.text('verification_value').notNullable();
    t.text('status').notNullable().defaultTo('pending').checkIn(['pending', 'verified']);
    t.timestamp('verified_at', { useTz: true });
    t.timestamp('last_checked_at', { useTz: true });
    t.timestamps(true, true);
    t.index(['environment_id']);
    t.index(['project_id']);
  });
  await knex.schema.createTable('domain_verify_calls', (t) => {
    t.bigIncrements('id');
    t.uuid('domain_id').notNullable().references('domains.id').onDelete('CASCADE');
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['domain_id', 'at']);
  });
  await knex.schema.alterTable('projects', (t) => {
    t.integer('domain_allowance');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('projects', (t) => t.dropColumn('domain_allowance'));
  await knex.schema.dropTableIfExists('domain_verify_calls');
  await knex.schema.dropTableIfExists('domains');
}
