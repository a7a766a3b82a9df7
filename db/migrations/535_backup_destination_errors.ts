import type { Knex } from 'knex';

/**
 * A backup destination's last refusal or failure (CONTRACT "Backups"): a local destination saved before
 * BACKUP_LOCAL_ROOTS, or one that is no longer allowed, stays listed, and its backups are refused with this
 * reason; a backup that succeeds there clears it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('backup_destinations', (t) => {
    t.text('last_error').nullable();
    t.timestamp('last_error_at', { useTz: true }).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('backup_destinations', (t) => {
    t.dropColumn('last_error');
    t.dropColumn('last_error_at');
  });
}
