import type { Knex } from 'knex';

/**
 * The task platform: tasks asked for by the system itself (auto_deploy, schedule), Idempotency-Key
 * records of task-starting requests (24 hours, per user), and activity events with their kind, type and
 * where they happened (GET /teams/{id}/activity).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_account_via_check');
  await knex.raw(
    "ALTER TABLE tasks ADD CONSTRAINT tasks_account_via_check CHECK (account_via IN ('session', 'cli', 'token', 'auto_deploy', 'schedule', 'system'))",
  );
  await knex.schema.createTable('idempotency_keys', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('key').notNullable();
    t.text('request_hash').notNullable();
    t.text('status').notNullable().checkIn(['pending', 'done']);
    t.specificType('task_ids', 'uuid[]');
    t.boolean('single');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['user_id', 'key']);
    t.index(['created_at']);
  });
  await knex.schema.alterTable('activity_events', (t) => {
    t.text('kind');
    t.text('type');
    t.text('actor_via');
    t.uuid('project_id').references('projects.id').onDelete('SET NULL');
    t.uuid('environment_id').references('environments.id').onDelete('SET NULL');
    t.uuid('task_id');
    t.text('address');
    t.text('summary');
    t.specificType('seq', 'bigint generated always as identity');
  });
  await knex.raw('CREATE INDEX activity_events_team_seq_index ON activity_events (team_id, seq DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS activity_events_team_seq_index');
  await knex.schema.alterTable('activity_events', (t) => {
    for (const c of [
      'kind',
      'type',
      'actor_via',
      'project_id',
      'environment_id',
      'task_id',
      'address',
      'summary',
      'seq',
    ])
      t.dropColumn(c);
  });
  await knex.schema.dropTableIfExists('idempotency_keys');
}
