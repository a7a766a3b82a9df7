import type { Knex } from 'knex';

/**
 * A confirmation code confirms the sign-up it was sent for: its password (argon2id hash) and name are kept
 * with the code, and confirming sets them on the account. A new sign-up for an unconfirmed address replaces
 * the pending one (older codes stop working), so a squatter's password never becomes the owner's.
 * Codes issued before this migration have neither (null): confirming keeps the account's own.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('email_confirmations', (t) => {
    t.text('password_hash');
    t.text('name');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('email_confirmations', (t) => {
    t.dropColumn('password_hash');
    t.dropColumn('name');
  });
}
