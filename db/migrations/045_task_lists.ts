import type { Knex } from 'knex';

/**
 * GET /tasks filters by kind or type within a team, newest first (tasks.seq): these indexes keep such a
 * page a short backward index scan on large teams, as (team_id, seq) does for the unfiltered list.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX IF NOT EXISTS tasks_team_kind_seq_index ON tasks (team_id, kind, seq)');
  await knex.raw('CREATE INDEX IF NOT EXISTS tasks_team_type_seq_index ON tasks (team_id, type, seq)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS tasks_team_type_seq_index');
  await knex.raw('DROP INDEX IF EXISTS tasks_team_kind_seq_index');
}
