import type { Invitation } from '../../db/models/invitation';
import type { Membership } from '../../db/models/membership';
import type { Team } from '../../db/models/team';
import type { User } from '../../db/models/user';
import type { Role } from '../lib/policy';
import { invitationStatus } from './people-service';
import { iso } from '../../core/time';

export function presentTeam(team: Team, role: Role) {
  return { id: team.id, name: team.name, role, created_at: iso(team.created_at) };
}

/**
 * The team's name, what may be changed, and the next-steps checklist (the `settings` column is not answered:
 * nothing documents its keys).
 */
export function presentTeamSettings({ team, role, next_steps }: { team: Team; role: Role; next_steps: unknown }) {
  return {
    id: team.id,
    name: team.name,
    role,
    created_at: iso(team.created_at),
    fields: { name: { max_length: 100, editable: role === 'owner' || role === 'admin' } },
    next_steps,
  };
}

export function presentMembership({
  membership: m,
  user,
}: {
  membership: Membership;
  user: Pick<User, 'name' | 'email'>;
}) {
  return {
    id: m.id,
    team_id: m.team_id,
    user_id: m.user_id,
    name: user.name,
    email: user.email,
    role: m.role,
    created_at: iso(m.created_at),
  };
}

export function presentInvitation(inv: Invitation) {
  return {
    id: inv.id,
    team_id: inv.team_id,
    email: inv.email,
    role: inv.role,
    status: invitationStatus(inv),
    expires_at: iso(inv.expires_at),
    created_at: iso(inv.created_at),
  };
}

/** The members (without their team and join date) and the invitations still waiting, with the roles the caller may give. */
export function presentPeople(p: {
  members: Array<Membership & { user_name: string; user_email: string }>;
  invitations: Invitation[];
  assignable_roles: unknown;
}) {
  return {
    data: p.members.map((row) => {
      const {
        team_id: _t,
        created_at: _c,
        ...m
      } = presentMembership({ membership: row, user: { name: row.user_name, email: row.user_email } });
      return m;
    }),
    invitations: p.invitations.map((i) => {
      const { id, email, role, status, expires_at } = presentInvitation(i);
      return { id, email, role, status, expires_at };
    }),
    assignable_roles: p.assignable_roles,
  };
}
