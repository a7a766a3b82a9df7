import type { Knex } from 'knex';

/**
 * Teams, projects and environments:
 * - at most one pending invitation (neither accepted nor revoked) per team and address; a new
 *   invitation for the same address revokes the previous one first;
 * - the environment listing walks (created_at, id) newest first.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    'CREATE UNIQUE INDEX invitations_pending_team_email_unique ON invitations (team_id, email) WHERE accepted_at IS NULL AND revoked_at IS NULL',
  );
  await knex.raw('CREATE INDEX environments_created_at_id_index ON environments (created_at DESC, id DESC)');
  await knex.raw(
    'CREATE INDEX environments_project_id_created_at_index ON environments (project_id, created_at DESC, id DESC)',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS environments_project_id_created_at_index');
  await knex.raw('DROP INDEX IF EXISTS environments_created_at_id_index');
  await knex.raw('DROP INDEX IF EXISTS invitations_pending_team_email_unique');
}
