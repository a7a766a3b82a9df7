import type { Knex } from 'knex';

/**
 * Auto-deploy and the rest of a project's lifecycle (CONTRACT "Projects: the rest"):
 * - projects.webhook_secret: the secret that signs `POST /hooks/git/{project_id}` (sealed, bound to the
 *   project); repository_reachable/default_branch/checked_at: the last access check (connect, reconnect, auto-deploy poll);
 *   cancelled_at: when the project was cancelled (its environments stopped, data kept 30 days).
 * - environments.auto_deploy_sha: the commit the last auto-deploy was started for (one start per commit: a
 *   failed build is not retried in a loop); auto_deploy_checked_at: the last look at its ref's head.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('projects', (t) => {
    t.text('webhook_secret');
    t.boolean('repository_reachable');
    t.text('repository_default_branch');
    t.timestamp('repository_checked_at', { useTz: true });
    t.timestamp('cancelled_at', { useTz: true });
  });
  await knex.schema.alterTable('environments', (t) => {
    t.text('auto_deploy_sha');
    t.timestamp('auto_deploy_checked_at', { useTz: true });
    t.timestamp('stopped_at', { useTz: true });
  });
  await knex.raw('CREATE INDEX environments_auto_deploy_index ON environments (project_id) WHERE auto_deploy');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS environments_auto_deploy_index');
  await knex.schema.alterTable('environments', (t) => {
    t.dropColumn('auto_deploy_sha');
    t.dropColumn('auto_deploy_checked_at');
    t.dropColumn('stopped_at');
  });
  await knex.schema.alterTable('projects', (t) => {
    t.dropColumn('webhook_secret');
    t.dropColumn('repository_reachable');
    t.dropColumn('repository_default_branch');
    t.dropColumn('repository_checked_at');
    t.dropColumn('cancelled_at');
  });
}
