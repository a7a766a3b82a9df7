import { ForeignKeyViolationError } from 'objection';
import type { Deps } from '../../system/deps';
import { Membership } from '../../db/models/membership';
import { Team } from '../../db/models/team';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';
import { authorize, reachableMemberships, ROLE_DESCRIPTIONS, ROLES, type Role } from '../lib/policy';
import { TEAM_NAME_MAX } from './schemas';
import { nextStepsFor } from '../../db/queries/next-steps';

/** The teams the caller reaches (a token: only its one team), with the caller's role in each. */
export async function listTeams(deps: Deps, actor: Actor) {
  const memberships = await reachableMemberships(deps.knex, actor);
  if (memberships.length === 0) return [] as Array<{ team: Team; role: Role }>;
  const roles = new Map(memberships.map((m) => [m.team_id, m.role]));
  const teams = await Team.query(deps.knex)
    .whereIn('id', [...roles.keys()])
    .orderBy([{ column: 'name' }, { column: 'id' }]);
  return teams.map((team) => ({ team, role: roles.get(team.id)! }));
}

/** What creating a team asks for. */
export function newTeamChoices() {
  return {
    fields: { name: { required: true, max_length: TEAM_NAME_MAX } },
    creator_role: 'owner' as const,
    roles: ROLES.map((name) => ({ name, description: ROLE_DESCRIPTIONS[name] })),
  };
}

export async function createTeam(deps: Deps, actor: Actor, input: { name: string }) {
  return deps.knex.transaction(async (trx) => {
    const team = await Team.query(trx).insertAndFetch({ name: input.name, settings: {} });
    await Membership.query(trx).insert({ team_id: team.id, user_id: actor.user.id, role: 'owner' });
    return { team, role: 'owner' as Role };
  });
}

async function loadTeam(deps: Deps, actor: Actor, id: string, action: Parameters<typeof authorize>[3]) {
  const role = await authorize(deps.knex, actor, id, action, 'team');
  const team = await Team.query(deps.knex).findById(id);
  if (!team) throw errors.notFound('team');
  return { team, role };
}

export async function getTeamSettings(deps: Deps, actor: Actor, id: string) {
  const { team, role } = await loadTeam(deps, actor, id, 'team:read');
  return { team, role, next_steps: await nextStepsFor(deps.knex, id, actor.user.id) };
}

export async function updateTeamSettings(deps: Deps, actor: Actor, id: string, input: { name?: string }) {
  const { team, role } = await loadTeam(deps, actor, id, 'team:update');
  const steps = () => nextStepsFor(deps.knex, id, actor.user.id);
  if (input.name === undefined || input.name === team.name) return { team, role, next_steps: await steps() };
  const updated = await Team.query(deps.knex).patchAndFetchById(id, {
    name: input.name,
    updated_at: new Date(),
  } as Partial<Team>);
  return { team: updated, role, next_steps: await steps() };
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * Deletes a team once nothing is left in it: no projects, no other members, no open invitations and
 * no active tokens of other people. Otherwise 409 team_not_empty, naming what is left.
 */
export async function deleteTeam(deps: Deps, actor: Actor, id: string): Promise<void> {
  await loadTeam(deps, actor, id, 'team:delete');
  const now = new Date();
  try {
    await deps.knex.transaction(async (trx) => {
      // Locks the team row: a project, membership or invitation added meanwhile waits for us.
      await trx('teams').where({ id }).forUpdate().first();
      const count = async (q: ReturnType<typeof trx>) =>
        Number(((await q.count<{ n: string }[]>({ n: '*' }))[0] as { n: string }).n);
      const left = {
        projects: await count(trx('projects').where({ team_id: id })),
        members: await count(trx('memberships').where({ team_id: id }).whereNot({ user_id: actor.user.id })),
        invitations: await count(
          trx('invitations')
            .where({ team_id: id })
            .whereNull('accepted_at')
            .whereNull('revoked_at')
            .where('expires_at', '>', now),
        ),
        tokens: await count(
          trx('access_tokens')
            .where({ team_id: id })
            .whereNot({ user_id: actor.user.id })
            .whereNull('revoked_at')
            .where('expires_at', '>', now),
        ),
      };
      const parts: string[] = [];
      if (left.projects) parts.push(plural(left.projects, 'project', 'projects'));
      if (left.members) parts.push(plural(left.members, 'other member', 'other members'));
      if (left.invitations) parts.push(plural(left.invitations, 'open invitation', 'open invitations'));
      if (left.tokens)
        parts.push(plural(left.tokens, 'active access token of someone else', 'active access tokens of others'));
      if (parts.length) {
        throw errors.conflict(
          'team_not_empty',
          `The team is not empty; still left: ${parts.join(', ')}. Remove them first.`,
          { left },
        );
      }
      await trx('teams').where({ id }).delete();
    });
  } catch (err) {
    // Something another area keeps for the team (and does not delete with it) is still there.
    if (err instanceof ForeignKeyViolationError || (err as { code?: string }).code === '23503') {
      throw appError('team_not_empty');
    }
    throw err;
  }
}

export type { Role };
