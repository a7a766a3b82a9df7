import type { Knex } from 'knex';

/**
 * `releases.commit_message`: the subject of the release's commit (`git log -1 --format=%s`, at most 200
 * characters), recorded at build and answered as the release's `commit_message` (null for releases built
 * before, or when git could not tell it).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('releases', (t) => {
    t.text('commit_message');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('releases', (t) => {
    t.dropColumn('commit_message');
  });
}
