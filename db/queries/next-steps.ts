/**
 * The team's next steps (GET /teams/{id}/settings `next_steps`), each derived from the team's real state,
 * and the per-user state of the bell and the checklist (team_member_state).
 */
import type { Knex } from 'knex';

const NEXT_STEPS = ['connect_repository', 'first_deploy', 'add_domain', 'create_token', 'invite_teammate'] as const;
type NextStep = (typeof NEXT_STEPS)[number];

const exists = async (q: Knex.QueryBuilder) => (await q.first(q.client.raw('1 AS one'))) !== undefined;

/** `[{id, done}]`, or null once the user hid the checklist for this team. */
export async function nextStepsFor(
  knex: Knex,
  teamId: string,
  userId: string,
): Promise<Array<{ id: NextStep; done: boolean }> | null> {
  const state = await knex('team_member_state')
    .where({ team_id: teamId, user_id: userId })
    .first('next_steps_hidden_at');
  if (state?.next_steps_hidden_at) return null;
  const projects = knex('projects').where({ team_id: teamId }).select('id');
  // Domains are another area's table: counted where it exists.
  const hasDomains = (await knex.raw(`SELECT to_regclass('public.domains') IS NOT NULL AS present`)).rows[0]
    .present as boolean;
  const done: Record<NextStep, Promise<boolean>> = {
    connect_repository: exists(knex('projects').where({ team_id: teamId }).whereNotNull('repository_url')),
    first_deploy: exists(knex('tasks').where({ team_id: teamId, type: 'deploy', status: 'succeeded' })),
    add_domain: hasDomains
      ? exists(
          knex('domains').whereIn('environment_id', knex('environments').whereIn('project_id', projects).select('id')),
        )
      : Promise.resolve(false),
    create_token: exists(knex('access_tokens').where({ team_id: teamId })),
    invite_teammate: exists(knex('memberships').where({ team_id: teamId }).whereNot({ user_id: userId })),
  };
  return Promise.all(NEXT_STEPS.map(async (id) => ({ id, done: await done[id] })));
}

/** Upserts one per-user column to now. */
export async function markMemberState(
  knex: Knex,
  teamId: string,
  userId: string,
  column: 'activity_seen_at' | 'next_steps_hidden_at',
) {
  await knex('team_member_state')
    .insert({ team_id: teamId, user_id: userId, [column]: knex.fn.now() })
    .onConflict(['team_id', 'user_id'])
    .merge({ [column]: knex.fn.now() });
}
