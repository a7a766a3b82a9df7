import type { Knex } from 'knex';

/**
 * `releases.archive_sha256` and `archive_bytes`: the release's archive in the release store (RELEASE_STORE,
 * host/release-store.ts), recorded once it is put there after the build. A host that fetches the archive checks
 * its sha256 before unpacking it. Null: not in the store (built before, or pruned: RELEASE_KEEP).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('releases', (t) => {
    t.text('archive_sha256');
    t.bigInteger('archive_bytes');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('releases', (t) => {
    t.dropColumn('archive_sha256');
    t.dropColumn('archive_bytes');
  });
}
