/** Who is in a team, as the code outside the API needs it (the API reads memberships through its policy). */
import type { Knex } from 'knex';

/** The e-mail addresses of the team's members whose role is one of `roles`. */
export async function memberEmails(
  knex: Knex,
  teamId: string,
  roles: readonly string[],
): Promise<Array<{ email: string }>> {
  return knex('memberships as m')
    .join('users as u', 'u.id', 'm.user_id')
    .where('m.team_id', teamId)
    .whereIn('m.role', roles)
    .select('u.email');
}
