import type { Knex } from 'knex';

/**
 * The data area: database services of environments, backup destinations of teams, snapshots, backup
 * windows of projects, and per environment its backup key (sealed) and whether it is protected.
 *
 * Secrets are sealed (system/crypto.ts): a service's password, a destination's secret fields, the backup
 * key. A snapshot row is `running` while it is written and becomes `available` only once its object is
 * complete at the destination; a failed one is `failed` and its partial object removed.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('environments', (t) => {
    t.boolean('protected').notNullable().defaultTo(false);
    t.text('backup_key_sealed');
  });
  // An environment named production is protected when created; existing ones too.
  await knex('environments').where({ name: 'production' }).update({ protected: true });

  await knex.schema.createTable('services', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.uuid('environment_id').notNullable().references('environments.id').onDelete('CASCADE');
    t.text('kind').notNullable();
    t.text('version').notNullable();
    t.text('plan').notNullable();
    t.text('status').notNullable().defaultTo('creating'); // creating | available | failed
    t.uuid('server_id');
    t.uuid('task_id');
    t.text('database_name').notNullable().unique();
    t.text('role_name').notNullable().unique();
    t.text('password_sealed').notNullable();
    t.timestamps(true, true);
    t.unique(['environment_id', 'kind']);
  });

  await knex.schema.createTable('backup_destinations', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('kind').notNullable(); // local | s3
    t.jsonb('settings').notNullable().defaultTo('{}'); // the fields that are not secret
    t.text('secrets_sealed'); // JSON of the secret fields, sealed
    t.timestamps(true, true);
    t.unique(['team_id', 'name']);
  });

  await knex.schema.createTable('backups', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.uuid('environment_id').notNullable().references('environments.id').onDelete('CASCADE');
    t.uuid('destination_id').references('backup_destinations.id').onDelete('SET NULL');
    t.uuid('task_id');
    t.text('status').notNullable().defaultTo('running'); // running | available | failed
    t.text('trigger').notNullable(); // manual | scheduled
    t.jsonb('contents').notNullable().defaultTo('[]');
    t.text('object_key').notNullable();
    t.bigInteger('size_bytes');
    t.text('sha256');
    t.text('key_fingerprint').notNullable();
    t.text('error');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('finished_at', { useTz: true });
    t.index(['environment_id', 'created_at']);
    t.index(['destination_id', 'status']);
  });

  await knex.schema.createTable('backup_windows', (t) => {
    t.uuid('project_id').primary().references('projects.id').onDelete('CASCADE');
    t.integer('hour_utc').notNullable();
    t.integer('retention_days').notNullable();
    t.uuid('destination_id').references('backup_destinations.id').onDelete('SET NULL');
    t.timestamps(true, true);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['backup_windows', 'backups', 'backup_destinations', 'services'])
    await knex.schema.dropTableIfExists(table);
  await knex.schema.alterTable('environments', (t) => {
    t.dropColumn('protected');
    t.dropColumn('backup_key_sealed');
  });
}
