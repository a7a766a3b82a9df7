import type { Knex } from 'knex';

/**
 * `releases.serving`: what the release's service.yaml said about serving, read when it was built: `{web, health}`,
 * each a string or null (no web command: the environment answers 503 "no web process" while it is live). Null for a
 * release built before it was recorded. Not secret: it is the repository's own file.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('releases', (t) => {
    t.jsonb('serving');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('releases', (t) => {
    t.dropColumn('serving');
  });
}
