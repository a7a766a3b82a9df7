import type { Knex } from 'knex';
import { Membership } from '../../db/models/membership';
import { requestRoles, type Actor } from '../../core/actor';
import { errors } from '../../core/errors';

import { ROLES, type Role } from '../../db/vocabulary';

export { ROLES, type Role };

/**
 * Every team permission, decided here and nowhere else.
 * - viewer: reads only.
 * - developer: reads projects and environments, deploys, builds, reads tasks and logs, validates (and
 *   opens support tickets).
 * - admin: everything in the team but deleting it, billing and making owners: configuration, data,
 *   machines, integrations.
 * - owner: everything.
 */
export type Action =
  | 'team:read'
  | 'team:update'
  | 'team:delete'
  | 'team:billing'
  | 'members:read'
  | 'members:invite'
  | 'members:manage'
  | 'members:manage-owners'
  | 'project:read'
  | 'project:create'
  | 'project:update'
  | 'project:delete'
  | 'environment:read'
  | 'environment:create'
  | 'environment:update'
  | 'environment:delete'
  | 'deploy'
  | 'build'
  | 'task:read'
  | 'task:cancel'
  | 'validate'
  | 'activity:read'
  | 'config:read'
  | 'config:write'
  | 'data:read'
  | 'data:write'
  | 'data:restore'
  | 'backup-key:reveal'
  | 'machines:read'
  | 'machines:write'
  | 'integrations:read'
  | 'integrations:manage'
  | 'tickets:read'
  | 'tickets:write';

const VIEWER: Action[] = [
  'team:read',
  'members:read',
  'project:read',
  'environment:read',
  'task:read',
  'validate',
  'activity:read',
  'config:read',
  'data:read',
  'machines:read',
  'integrations:read',
  'tickets:read',
];
const DEVELOPER: Action[] = [...VIEWER, 'deploy', 'build', 'task:cancel', 'tickets:write'];
const ADMIN: Action[] = [
  ...DEVELOPER,
  'config:write',
  'data:write',
  'data:restore',
  'backup-key:reveal',
  'machines:write',
  'integrations:manage',
  'team:update',
  'members:invite',
  'members:manage',
  'project:create',
  'project:update',
  'project:delete',
  'environment:create',
  'environment:update',
  'environment:delete',
];
const OWNER: Action[] = [...ADMIN, 'team:delete', 'team:billing', 'members:manage-owners'];

const PERMISSIONS: Record<Role, ReadonlySet<Action>> = {
  viewer: new Set(VIEWER),
  developer: new Set(DEVELOPER),
  admin: new Set(ADMIN),
  owner: new Set(OWNER),
};

export function can(role: Role, action: Action): boolean {
  return PERMISSIONS[role].has(action);
}

/**
 * The teams the caller reaches: all of a signed-in user's memberships; for a token, only its one
 * team, and only while its issuer is still a member there.
 */
export async function reachableMemberships(knex: Knex, actor: Actor): Promise<Membership[]> {
  if (actor.kind === 'token') return [actor.membership];
  return Membership.query(knex).where('user_id', actor.user.id);
}

export async function reachableTeamIds(knex: Knex, actor: Actor): Promise<string[]> {
  return (await reachableMemberships(knex, actor)).map((m) => m.team_id);
}

/** The caller's role in a team, or undefined when the team is out of reach (answer 404 then). */
export async function roleIn(
  knex: Knex,
  actor: Actor,
  teamId: string,
  opts: { fresh?: boolean } = {},
): Promise<Role | undefined> {
  if (actor.kind === 'token') return actor.token.team_id === teamId ? actor.membership.role : undefined;
  const known = requestRoles(actor);
  if (known.has(teamId) && !opts.fresh) return (known.get(teamId) ?? undefined) as Role | undefined;
  const m = await Membership.query(knex).findOne({ user_id: actor.user.id, team_id: teamId });
  known.set(teamId, m?.role ?? null);
  return m?.role;
}

/**
 * Throws 404 when the team is out of the caller's reach (a resource of another team does not exist
 * for them), 403 forbidden when their role may not do the action. Returns the role.
 */
export async function authorize(
  knex: Knex,
  actor: Actor,
  teamId: string,
  action: Action,
  what = 'resource',
): Promise<Role> {
  const role = await roleIn(knex, actor, teamId);
  if (!role) throw errors.notFound(what);
  if (!can(role, action)) throw errors.forbidden();
  return role;
}

// ---------------------------------------------------------------------------------------------
// Role decisions about people (invitations and memberships). Only owners make, unmake or remove
// owners; a team always keeps at least one owner.

export const ROLE_DESCRIPTIONS: Record<Role, string> = {
  owner: 'Everything in the team, including deleting it, billing and making or removing owners.',
  admin: 'Everything in the team but deleting it, billing and owners: people, projects, environments, settings.',
  developer: 'Reads projects and environments, deploys, builds, reads tasks and logs, validates manifests.',
  viewer: 'Reads only.',
};

/** The roles a caller with `actorRole` may give (by invitation or by a role change). */
export function assignableRoles(actorRole: Role): Role[] {
  if (!can(actorRole, 'members:invite') && !can(actorRole, 'members:manage')) return [];
  return ROLES.filter((r) => r !== 'owner' || can(actorRole, 'members:manage-owners'));
}

/** Invite someone as `role`: admin+; only owners invite owners. */
export function assertMayInvite(actorRole: Role, role: Role): void {
  if (!can(actorRole, 'members:invite')) throw errors.forbidden();
  if (role === 'owner' && !can(actorRole, 'members:manage-owners'))
    throw errors.forbidden('Only owners may invite owners');
}

/** Change a member's role from `from` to `to`: admin+; only owners make or unmake owners. */
export function assertMayChangeRole(actorRole: Role, from: Role, to: Role): void {
  if (!can(actorRole, 'members:manage')) throw errors.forbidden();
  if ((from === 'owner' || to === 'owner') && from !== to && !can(actorRole, 'members:manage-owners')) {
    throw errors.forbidden('Only owners may make or unmake owners');
  }
}

/** Remove a membership: anyone may leave a team themselves; otherwise admin+, and only owners remove owners. */
export function assertMayRemove(actorRole: Role, targetRole: Role, self: boolean): void {
  if (self) return;
  if (!can(actorRole, 'members:manage')) throw errors.forbidden();
  if (targetRole === 'owner' && !can(actorRole, 'members:manage-owners'))
    throw errors.forbidden('Only owners may remove owners');
}

/** True when changing (or removing, `to` null) a membership of role `from` would leave the team without an owner. */
export function leavesNoOwner(ownerCount: number, from: Role, to: Role | null): boolean {
  return from === 'owner' && to !== 'owner' && ownerCount <= 1;
}
