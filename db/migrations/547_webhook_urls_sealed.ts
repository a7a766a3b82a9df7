import type { Knex } from 'knex';

/**
 * A webhook's URL may carry a token in its query: it is kept sealed in `sealed_url` (system/crypto.ts, aad
 * `integration-url:<id>`), and `config` keeps only `display_url` (userinfo dropped, query values
 * "redacted") for answers. A migration cannot reach the encryption key, so rows written before this keep
 * their clear `config.url` until the console seals them: on start, and whenever such a row is read
 * (db/queries/integrations.ts). A clear `config.url` is the marker of a row not sealed yet.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('integrations', (t) => {
    t.text('sealed_url');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('integrations', (t) => {
    t.dropColumn('sealed_url');
  });
}
