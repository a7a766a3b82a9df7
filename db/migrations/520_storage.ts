import type { Knex } from 'knex';

/**
 * Storage (CONTRACT "Machines"): every environment's storage allowance and its two disks, `database` (the
 * service database's files: a tablespace of the services server) and `files` (the environment's volume,
 * VC_VOLUME_PATH). Each disk has its size (the two sum to the allowance), the root of STORAGE_ROOTS it lives
 * under, and, after a move, the root its previous copy is kept under until `storage/discard`. Rows are made
 * when an environment's storage is first used (db/queries/storage.ts), on the first root of STORAGE_ROOTS.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('storage_allowances', (t) => {
    t.uuid('environment_id').primary().references('environments.id').onDelete('CASCADE');
    t.integer('allowance_gb').notNullable();
    /** The subscription paying for the part beyond what the web server's plan includes (null: none). */
    t.uuid('subscription_id').nullable().references('subscriptions.id').onDelete('SET NULL');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('storage_disks', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable().references('projects.id').onDelete('CASCADE');
    t.uuid('environment_id').notNullable().references('environments.id').onDelete('CASCADE');
    t.text('disk').notNullable().checkIn(['database', 'files']);
    t.integer('size_gb').notNullable();
    t.text('location').notNullable();
    /** Where the copy left by the last move is kept until discarded (null: none). */
    t.text('old_location').nullable();
    /** Bumped at every move: names the database disk's tablespace (vc_<environment>_<generation>). */
    t.integer('generation').notNullable().defaultTo(0);
    t.integer('old_generation').nullable();
    t.timestamps(true, true);
    t.unique(['environment_id', 'disk']);
    t.index(['team_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('storage_disks');
  await knex.schema.dropTableIfExists('storage_allowances');
}
