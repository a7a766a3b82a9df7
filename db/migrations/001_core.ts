import type { Knex } from 'knex';

/**
 * Core schema: accounts, sessions, teams, tokens, projects, environments, releases and tasks.
 * Later areas add their own migrations beside this one (NNN_area.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE EXTENSION IF NOT EXISTS citext');

  await knex.schema.createTable('users', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.specificType('email', 'citext').notNullable().unique();
    t.text('name').notNullable();
    t.text('password_hash').notNullable();
    t.timestamp('email_confirmed_at', { useTz: true });
    t.timestamps(true, true);
  });

  await knex.schema.createTable('email_confirmations', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('code_digest').notNullable().unique();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('sessions', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('secret_digest').notNullable().unique();
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('kind').notNullable().checkIn(['browser', 'cli']);
    t.text('csrf_token').notNullable();
    t.timestamp('authenticated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('ended_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['user_id']);
  });

  await knex.schema.createTable('cli_device_codes', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('device_code_digest').notNullable().unique();
    t.text('user_code').notNullable().unique();
    t.text('status').notNullable().defaultTo('pending').checkIn(['pending', 'approved', 'denied', 'consumed']);
    t.uuid('user_id').references('users.id').onDelete('CASCADE');
    t.integer('interval_seconds').notNullable();
    t.timestamp('last_polled_at', { useTz: true });
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('ssh_keys', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('key_type').notNullable();
    t.text('public_key').notNullable();
    t.text('fingerprint').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['user_id', 'fingerprint']);
  });

  await knex.schema.createTable('teams', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('name').notNullable();
    t.jsonb('settings').notNullable().defaultTo('{}');
    t.timestamps(true, true);
  });

  await knex.schema.createTable('memberships', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('role').notNullable().checkIn(['owner', 'admin', 'developer', 'viewer']);
    t.timestamps(true, true);
    t.unique(['team_id', 'user_id']);
    t.index(['user_id']);
  });

  await knex.schema.createTable('invitations', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.specificType('email', 'citext').notNullable();
    t.text('role').notNullable().checkIn(['owner', 'admin', 'developer', 'viewer']);
    t.uuid('invited_by').references('users.id').onDelete('SET NULL');
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('accepted_at', { useTz: true });
    t.timestamp('revoked_at', { useTz: true });
    t.timestamps(true, true);
    t.index(['team_id']);
  });

  await knex.schema.createTable('access_tokens', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.text('purpose').notNullable();
    t.text('digest').notNullable().unique();
    t.text('key_id').notNullable();
    t.integer('expires_in_days').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('last_used_at', { useTz: true });
    t.timestamp('revoked_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['user_id']);
    t.index(['expires_at']);
  });

  await knex.schema.createTable('token_reminders', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('token_id').notNullable().references('access_tokens.id').onDelete('CASCADE');
    t.text('reminder_key').notNullable().unique();
    t.timestamp('sent_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['token_id']);
  });

  await knex.schema.createTable('projects', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('repository_url');
    t.timestamps(true, true);
    t.unique(['team_id', 'name']);
  });

  await knex.schema.createTable('environments', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('git_ref').notNullable();
    t.boolean('auto_deploy').notNullable().defaultTo(false);
    t.integer('port').notNullable().unique();
    t.uuid('live_release_id');
    t.timestamps(true, true);
    t.unique(['project_id', 'name']);
    t.index(['team_id']);
  });

  await knex.schema.createTable('releases', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.uuid('environment_id').notNullable().references('environments.id').onDelete('CASCADE');
    t.text('git_ref').notNullable();
    t.text('commit_sha').notNullable();
    t.text('status').notNullable().defaultTo('building').checkIn(['building', 'ready', 'failed']);
    t.uuid('task_id');
    t.timestamp('built_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['project_id', 'git_ref']);
    t.index(['environment_id']);
  });

  await knex.schema.createTable('deployments', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('environment_id').notNullable().references('environments.id').onDelete('CASCADE');
    t.uuid('release_id').notNullable().references('releases.id').onDelete('CASCADE');
    t.uuid('task_id').notNullable().unique();
    t.text('type').notNullable();
    t.boolean('skip_steps').notNullable().defaultTo(false);
    t.timestamp('went_live_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['environment_id', 'went_live_at']);
  });

  await knex.schema.createTable('tasks', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.specificType('seq', 'bigint generated always as identity').notNullable().unique();
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('project_id').references('projects.id').onDelete('CASCADE');
    t.uuid('environment_id').references('environments.id').onDelete('CASCADE');
    t.text('kind').notNullable().checkIn(['deployments', 'backups', 'machines', 'configuration', 'maintenance']);
    t.text('type').notNullable();
    t.text('status')
      .notNullable()
      .defaultTo('pending')
      .checkIn(['pending', 'running', 'succeeded', 'failed', 'cancelled']);
    t.uuid('account_user_id').references('users.id').onDelete('SET NULL');
    t.text('account_via').notNullable().checkIn(['session', 'cli', 'token', 'system']);
    t.text('workflow_id').notNullable();
    t.text('run_id');
    t.jsonb('params').notNullable().defaultTo('{}');
    t.jsonb('result');
    t.text('error');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('started_at', { useTz: true });
    t.timestamp('finished_at', { useTz: true });
    t.index(['team_id', 'seq']);
    t.index(['environment_id', 'seq']);
    t.index(['project_id', 'seq']);
    t.index(['status']);
  });

  await knex.schema.createTable('task_logs', (t) => {
    t.uuid('task_id').notNullable().references('tasks.id').onDelete('CASCADE');
    t.integer('seq').notNullable();
    t.text('chunk').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['task_id', 'seq']);
  });

  await knex.schema.createTable('activity_events', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('team_id').references('teams.id').onDelete('CASCADE');
    t.uuid('user_id').references('users.id').onDelete('SET NULL');
    t.text('action').notNullable();
    t.jsonb('details').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['team_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'activity_events',
    'task_logs',
    'tasks',
    'deployments',
    'releases',
    'environments',
    'projects',
    'token_reminders',
    'access_tokens',
    'invitations',
    'memberships',
    'teams',
    'ssh_keys',
    'cli_device_codes',
    'sessions',
    'email_confirmations',
    'users',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
