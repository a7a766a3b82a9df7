import type { Knex } from 'knex';

/**
 * `snapshot_object_deletions`: snapshot objects whose rows are gone but whose files or S3 objects are still at
 * their destination. Deleting a project (DELETE /projects/{id}, only once no environment is left) takes its
 * deleted environments' tombstones, their backup keys and their snapshot rows along; the objects, unreadable
 * without those keys, are queued here in the same transaction and deleted from their destination by the daily
 * prune (activities/maintenance/snapshot-objects.ts). A destination that fails is tried again on the next days.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('snapshot_object_deletions', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('destination_id').notNullable().references('backup_destinations.id').onDelete('CASCADE');
    t.text('object_key').notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.text('last_error');
    t.timestamp('queued_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['destination_id', 'object_key']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('snapshot_object_deletions');
}
