import type { Knex } from 'knex';

/**
 * The edge's Basic password as HAProxy checks it (docs/edge-password-and-logs.md): beside the argon2id hash,
 * a keyed HMAC-SHA256 of `username:password` (hex) and the id of the key it was made with. Rows saved before
 * this have the hash only; the edge's checker verifies it once and fills these in. Never shown by the API.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('environment_edges', (t) => {
    t.text('password_digest');
    t.text('password_digest_key_id');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('environment_edges', (t) => {
    t.dropColumn('password_digest');
    t.dropColumn('password_digest_key_id');
  });
}
