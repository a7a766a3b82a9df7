import type { Knex } from 'knex';

/**
 * Idempotency-Key on every write, not only task starts (api/lib/idempotency.ts): a write that starts no task keeps
 * its answer (status, and the body sealed under the console's encryption key: a token's creation answer holds its
 * secret) for the key's 24 hours, and a repeat is answered with it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.smallint('answer_status');
    t.text('answer_sealed');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (t) => {
    t.dropColumn('answer_status');
    t.dropColumn('answer_sealed');
  });
}
