import type { Knex } from 'knex';

/**
 * Restore drills (CONTRACT "Point-in-time recovery"): what a backup recorded of the data it took, taken in the
 * dump's own snapshot (`counts`: `{tables: {"schema.table": rows} | null, files: <tar entries> | null}`; null for
 * a snapshot taken before drills existed, which a drill verifies by its restore alone), and the outcome of the
 * last drill (`verified_at`: when it ended; `verify_error`: null when it passed, else why it failed).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('backups', (t) => {
    t.jsonb('counts').nullable();
    t.timestamp('verified_at', { useTz: true }).nullable();
    t.text('verify_error').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('backups', (t) => {
    t.dropColumn('counts');
    t.dropColumn('verified_at');
    t.dropColumn('verify_error');
  });
}
