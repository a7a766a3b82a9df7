import type { Knex } from 'knex';

/**
 * `hosts.encryption_key_id`: the id of the encryption key a host's agent loaded at its start, so that
 * `npm run keys -- reseal` seals under a new key only once every host that is not lost has it
 * (docs/encryption-keys.md). Null for a row written before.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('hosts', (t) => {
    t.text('encryption_key_id');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('hosts', (t) => {
    t.dropColumn('encryption_key_id');
  });
}
