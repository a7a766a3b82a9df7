import type { Knex } from 'knex';

/**
 * Deploys: a task creates at most one release (a retried activity finds it again), and the releases of
 * an environment are looked up by commit (a ready release of the same commit skips the build).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE UNIQUE INDEX releases_task_id_unique ON releases (task_id) WHERE task_id IS NOT NULL');
  await knex.raw('CREATE INDEX releases_environment_commit_index ON releases (environment_id, commit_sha)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS releases_environment_commit_index');
  await knex.raw('DROP INDEX IF EXISTS releases_task_id_unique');
}
