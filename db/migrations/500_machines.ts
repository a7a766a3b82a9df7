import type { Knex } from 'knex';

/**
 * Machines: every environment's servers (a `web` server from its creation; `database` when the database
 * gets a server of its own), the plan each has and the size that plan gave it (kept on the row: a server
 * keeps its size when the price list changes), the build machine of each environment, and the resource
 * samples of every environment (kept 90 days by the `resource-samples-prune` schedule).
 *
 * Existing environments get their `web` server and build machine here, on the plans new environments get
 * (the shipped price list's `default_plan` and first local build plan at the time of this migration).
 */
const DEFAULT_PLAN = { id: 'small', cpu: 0.5, memory_mb: 512, disk_gb: 10 };
const DEFAULT_BUILD = { provider: 'local', plan: 'build-small', cpu: 1, memory_mb: 1024 };

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('servers', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.uuid('environment_id').notNullable().references('environments.id').onDelete('CASCADE');
    t.text('role').notNullable().checkIn(['web', 'database']);
    t.text('name').notNullable();
    t.text('plan').notNullable();
    t.decimal('cpu', 6, 2).notNullable();
    t.integer('memory_mb').notNullable();
    t.integer('disk_gb').notNullable();
    t.text('status').notNullable().defaultTo('running').checkIn(['running', 'resizing', 'rebooting']);
    t.timestamps(true, true);
    t.unique(['environment_id', 'role']);
    t.index(['team_id', 'created_at']);
  });
  await knex.raw(
    `INSERT INTO servers (team_id, project_id, environment_id, role, name, plan, cpu, memory_mb, disk_gb, created_at, updated_at)
     SELECT team_id, project_id, id, 'web', name || '-web', ?, ?, ?, ?, created_at, now() FROM environments`,
    [DEFAULT_PLAN.id, DEFAULT_PLAN.cpu, DEFAULT_PLAN.memory_mb, DEFAULT_PLAN.disk_gb],
  );

  await knex.schema.createTable('build_machines', (t) => {
    t.uuid('environment_id').primary().references('environments.id').onDelete('CASCADE');
    t.text('provider').notNullable();
    t.text('plan').notNullable();
    t.decimal('cpu', 6, 2).notNullable();
    t.integer('memory_mb').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(
    `INSERT INTO build_machines (environment_id, provider, plan, cpu, memory_mb) SELECT id, ?, ?, ?, ? FROM environments`,
    [DEFAULT_BUILD.provider, DEFAULT_BUILD.plan, DEFAULT_BUILD.cpu, DEFAULT_BUILD.memory_mb],
  );

  // One row a minute an environment; the primary key carries the values so that a window is read from the
  // index alone (GET /environments/{id}/resources, 1h and 24h: one range scan, grouped by date_bin; longer
  // windows read the hourly sums of migration 501).
  await knex.raw(`
    CREATE TABLE resource_samples (
      environment_id uuid NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
      at timestamptz NOT NULL,
      cpu real NOT NULL,
      memory_bytes bigint NOT NULL,
      disk_bytes bigint NOT NULL,
      PRIMARY KEY (environment_id, at) INCLUDE (cpu, memory_bytes, disk_bytes)
    )`);
  // The daily prune deletes by time across environments.
  await knex.raw('CREATE INDEX resource_samples_at_index ON resource_samples (at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('resource_samples');
  await knex.schema.dropTableIfExists('build_machines');
  await knex.schema.dropTableIfExists('servers');
}
