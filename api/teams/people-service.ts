import { UniqueViolationError } from 'objection';
import { recordActivity } from '../../db/queries/activity';
import type { Knex } from 'knex';
import type { Deps } from '../../system/deps';
import { Invitation } from '../../db/models/invitation';
import { Membership } from '../../db/models/membership';
import { Team } from '../../db/models/team';
import { User } from '../../db/models/user';
import { invitationEmail } from '../../system/mail/templates';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';
import {
  assertMayChangeRole,
  assertMayInvite,
  assertMayRemove,
  assignableRoles,
  authorize,
  leavesNoOwner,
  roleIn,
  type Role,
} from '../lib/policy';

export const INVITATION_DAYS = 7;

/** Where an invitation stands: accepted or revoked for good, else open until it expires. */
export function invitationStatus(inv: Invitation, now = new Date()): 'open' | 'expired' | 'accepted' | 'revoked' {
  if (inv.accepted_at) return 'accepted';
  if (inv.revoked_at) return 'revoked';
  if (new Date(inv.expires_at).getTime() <= now.getTime()) return 'expired';
  return 'open';
}

const notOpen = (status: string) =>
  appError('invitation_not_open', `The invitation is ${status}; only an open invitation can be used`, {
    extra: { status },
  });
const lastOwner = () => appError('last_owner');

/** Members (with name and e-mail) and the invitations still waiting (open or expired, not revoked or accepted). */
export async function listPeople(deps: Deps, actor: Actor, teamId: string) {
  const role = await authorize(deps.knex, actor, teamId, 'members:read', 'team');
  const rows = await Membership.query(deps.knex)
    .alias('m')
    .join('users as u', 'u.id', 'm.user_id')
    .where('m.team_id', teamId)
    .select('m.*', 'u.name as user_name', 'u.email as user_email')
    .orderBy([{ column: 'm.created_at' }, { column: 'm.id' }]);
  const invitations = await Invitation.query(deps.knex)
    .where({ team_id: teamId })
    .whereNull('accepted_at')
    .whereNull('revoked_at')
    .orderBy([{ column: 'created_at' }, { column: 'id' }]);
  return {
    members: rows as Array<Membership & { user_name: string; user_email: string }>,
    invitations,
    assignable_roles: assignableRoles(role),
  };
}

async function sendInvitation(deps: Deps, actor: Actor, team: Team, inv: Invitation): Promise<void> {
  const mail = invitationEmail({
    teamName: team.name,
    inviterName: actor.user.name,
    role: inv.role,
    invitationId: inv.id,
    baseUrl: deps.config.baseUrl,
    expiresAt: new Date(inv.expires_at),
  });
  try {
    await deps.mailer.send({ to: inv.email, ...mail });
  } catch {
    throw appError(
      'mail_not_sent',
      'The invitation e-mail could not be sent, so nothing was changed; try again shortly',
    );
  }
}

const expiry = () => new Date(Date.now() + INVITATION_DAYS * 86_400_000);

/**
 * Invites an address. An existing member's address is refused (409 on email). A pending invitation for
 * the same address is replaced: it is revoked and the new one (new role, new expiry) is sent.
 * The e-mail is sent before the change is kept; when it cannot be sent nothing changes (503).
 */
export async function createInvitation(deps: Deps, actor: Actor, teamId: string, input: { email: string; role: Role }) {
  const actorRole = await authorize(deps.knex, actor, teamId, 'members:invite', 'team');
  assertMayInvite(actorRole, input.role);
  try {
    return await deps.knex.transaction(async (trx) => {
      const team = await Team.query(trx).findById(teamId).forUpdate();
      if (!team) throw errors.notFound('team');
      const member = await Membership.query(trx)
        .alias('m')
        .join('users as u', 'u.id', 'm.user_id')
        .where('m.team_id', teamId)
        .where('u.email', input.email)
        .first();
      if (member) {
        throw appError('conflict', 'That address belongs to a member of this team already', {
          fields: { email: 'is already a member of this team' },
        });
      }
      const now = new Date();
      await Invitation.query(trx)
        .where({ team_id: teamId, email: input.email })
        .whereNull('accepted_at')
        .whereNull('revoked_at')
        .patch({ revoked_at: now, updated_at: now } as Partial<Invitation>);
      const inv = await Invitation.query(trx).insertAndFetch({
        team_id: teamId,
        email: input.email,
        role: input.role,
        invited_by: actor.user.id,
        expires_at: expiry(),
      } as Partial<Invitation>);
      await recordActivity(trx, {
        teamId,
        actor,
        kind: 'access',
        type: 'invitation_sent',
        summary: `${input.email} invited as ${input.role}`,
      });
      await sendInvitation(deps, actor, team, inv);
      return inv;
    });
  } catch (err) {
    if (err instanceof UniqueViolationError) {
      throw appError('conflict', 'An invitation for that address is being sent right now', {
        fields: { email: 'has a pending invitation' },
      });
    }
    throw err;
  }
}

/** Loads an invitation for someone who manages the team's people; another team's answers 404. */
async function manageableInvitation(trx: Knex, actor: Actor, id: string) {
  const inv = await Invitation.query(trx).findById(id).forUpdate();
  if (!inv) throw errors.notFound('invitation');
  const role = await roleIn(trx, actor, inv.team_id);
  if (!role) throw errors.notFound('invitation');
  assertMayInvite(role, inv.role);
  return inv;
}

/** A pending invitation (open or expired) runs for 7 more days from now and is e-mailed again. */
export async function renewInvitation(deps: Deps, actor: Actor, id: string) {
  return deps.knex.transaction(async (trx) => {
    const inv = await manageableInvitation(trx, actor, id);
    const status = invitationStatus(inv);
    if (status === 'accepted' || status === 'revoked') throw notOpen(status);
    const team = await Team.query(trx).findById(inv.team_id);
    const renewed = await Invitation.query(trx).patchAndFetchById(id, {
      expires_at: expiry(),
      updated_at: new Date(),
    } as Partial<Invitation>);
    await sendInvitation(deps, actor, team!, renewed);
    return renewed;
  });
}

/** Revokes a pending invitation (open or expired). */
export async function revokeInvitation(deps: Deps, actor: Actor, id: string): Promise<void> {
  await deps.knex.transaction(async (trx) => {
    const inv = await manageableInvitation(trx, actor, id);
    const status = invitationStatus(inv);
    if (status === 'accepted' || status === 'revoked') throw notOpen(status);
    const now = new Date();
    await Invitation.query(trx)
      .patch({ revoked_at: now, updated_at: now } as Partial<Invitation>)
      .where({ id });
    await recordActivity(trx, {
      teamId: inv.team_id,
      actor,
      kind: 'access',
      type: 'invitation_revoked',
      summary: `Invitation of ${inv.email} revoked`,
    });
  });
}

/**
 * Accepts an invitation: only the signed-in account whose address is the invited one; anyone else
 * learns nothing (404). That address must be confirmed (403 email_not_confirmed).
 */
export async function acceptInvitation(deps: Deps, actor: Actor, id: string) {
  return deps.knex.transaction(async (trx) => {
    const inv = await Invitation.query(trx).findById(id).forUpdate();
    const user = await User.query(trx).findById(actor.user.id);
    if (!inv || !user || user.email.toLowerCase() !== inv.email.toLowerCase()) throw errors.notFound('invitation');
    if (!user.email_confirmed_at) {
      throw appError(
        'email_not_confirmed',
        'Confirm your e-mail address first (enter the code we sent), then accept the invitation',
      );
    }
    const status = invitationStatus(inv);
    if (status !== 'open') throw notOpen(status);
    const existing = await Membership.query(trx).findOne({ team_id: inv.team_id, user_id: user.id });
    if (existing) throw appError('conflict', 'You are a member of this team already');
    const now = new Date();
    await Invitation.query(trx)
      .patch({ accepted_at: now, updated_at: now } as Partial<Invitation>)
      .where({ id });
    const m = await Membership.query(trx).insertAndFetch({
      team_id: inv.team_id,
      user_id: user.id,
      role: inv.role,
    } as Partial<Membership>);
    await recordActivity(trx, {
      teamId: inv.team_id,
      actor,
      kind: 'access',
      type: 'member_joined',
      summary: `${user.email} joined as ${inv.role}`,
    });
    return { membership: m, user };
  });
}

/** Locks the team's memberships (changes to owners are serialised per team) and finds one. */
async function lockedMembership(trx: Knex, actor: Actor, id: string) {
  const target = await Membership.query(trx).findById(id);
  if (!target) throw errors.notFound('membership');
  const actorRole = await roleIn(trx, actor, target.team_id);
  if (!actorRole) throw errors.notFound('membership');
  await trx('teams').where({ id: target.team_id }).forUpdate().first();
  const fresh = await Membership.query(trx).findById(id);
  if (!fresh) throw errors.notFound('membership');
  const owners = await Membership.query(trx).where({ team_id: fresh.team_id, role: 'owner' }).resultSize();
  // The caller's role read again under the lock.
  const role = (await roleIn(trx, actor, fresh.team_id, { fresh: true })) ?? actorRole;
  return { target: fresh, actorRole: role, owners };
}

export async function updateMembership(deps: Deps, actor: Actor, id: string, input: { role: Role }) {
  return deps.knex.transaction(async (trx) => {
    const { target, actorRole, owners } = await lockedMembership(trx, actor, id);
    assertMayChangeRole(actorRole, target.role, input.role);
    if (leavesNoOwner(owners, target.role, input.role)) throw lastOwner();
    const updated =
      target.role === input.role
        ? target
        : await Membership.query(trx).patchAndFetchById(id, {
            role: input.role,
            updated_at: new Date(),
          } as Partial<Membership>);
    const user = await User.query(trx).findById(updated.user_id);
    if (target.role !== input.role) {
      await recordActivity(trx, {
        teamId: target.team_id,
        actor,
        kind: 'access',
        type: 'member_role_changed',
        summary: `${user!.email}: ${target.role} -> ${input.role}`,
      });
    }
    return { membership: updated, user: user! };
  });
}

export async function deleteMembership(deps: Deps, actor: Actor, id: string): Promise<void> {
  await deps.knex.transaction(async (trx) => {
    const { target, actorRole, owners } = await lockedMembership(trx, actor, id);
    assertMayRemove(actorRole, target.role, target.user_id === actor.user.id);
    if (leavesNoOwner(owners, target.role, null)) throw lastOwner();
    await Membership.query(trx).deleteById(id);
    const user = await User.query(trx).findById(target.user_id);
    await recordActivity(trx, {
      teamId: target.team_id,
      actor,
      kind: 'access',
      type: 'member_removed',
      summary: `${user?.email ?? target.user_id} left the team`,
    });
  });
}
