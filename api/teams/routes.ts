import { defineRoute, type RouteDef } from '../lib/define-route';
import { scopes } from '../lib/scopes';
import * as s from './schemas';
import * as teams from './service';
import * as people from './people-service';
import { errorResponse as error } from '../lib/responses';
import { presentInvitation, presentMembership, presentPeople, presentTeam, presentTeamSettings } from './presenter';

const tags = ['teams'];

const teamRoutes = [
  defineRoute({
    method: 'get',
    path: '/teams',
    operationId: 'listTeams',
    description:
      'Reachable with a personal access token, which sees only the one team it was issued for. For a signed-in caller, every team with a membership.',
    summary: 'The teams the caller belongs to, with their role in each; a token sees only its one team',
    tags,
    auth: 'token',
    permission: 'team:read',
    responses: { 200: { description: 'Teams', schema: s.teamListSchema } },
    handler: (ctx) => teams.listTeams(ctx.deps, ctx.actor),
    present: ({ team, role }) => presentTeam(team, role),
  }),
  defineRoute({
    method: 'get',
    path: '/teams/new',
    operationId: 'getNewTeamChoices',
    description:
      'The first call of creating a team: the rules its name must follow and the roles a team knows, so a dialog or a script knows what `POST /teams` accepts.',
    summary: 'What creating a team asks for: the name rules and the roles a team knows',
    tags,
    auth: 'session',
    responses: { 200: { description: 'Choices', schema: s.newTeamSchema } },
    handler(ctx) {
      ctx.body = teams.newTeamChoices();
    },
  }),
  defineRoute({
    method: 'post',
    path: '/teams',
    operationId: 'createTeam',
    description: 'Creates a team with the caller as its only member, in the `owner` role. Signed-in only.',
    summary: 'Creates a team; its creator becomes its owner',
    tags,
    auth: 'session',
    body: s.createTeamBody,
    responses: { 201: { description: 'The team', schema: s.teamSchema }, 422: error('Invalid name') },
    handler(ctx) {
      ctx.status = 201;
      return teams.createTeam(ctx.deps, ctx.actor, ctx.input.body);
    },
    present: ({ team, role }) => presentTeam(team, role),
  }),
  defineRoute({
    method: 'get',
    path: '/teams/{id}/settings',
    operationId: 'getTeamSettings',
    description:
      "The team's name, the caller's role, the fields that may be changed, and the next-steps checklist (null once hidden by the caller).",
    summary: "The team's settings and what may be changed",
    tags,
    auth: 'session',
    permission: 'team:read',
    scope: scopes.team,
    params: s.idParams,
    responses: { 200: { description: 'Settings', schema: s.teamSettingsSchema }, 404: error('No such team') },
    handler: (ctx) => teams.getTeamSettings(ctx.deps, ctx.actor, ctx.input.params.id),
    present: presentTeamSettings,
  }),
  defineRoute({
    method: 'post',
    path: '/teams/{id}/settings',
    operationId: 'updateTeamSettings',
    description:
      'Renames the team, for roles that may change its settings (else 403). A bad name is 422 on `name` and nothing changes.',
    summary: "Changes the team's settings (its name)",
    tags,
    auth: 'session',
    permission: 'team:update',
    scope: scopes.team,
    params: s.idParams,
    body: s.updateTeamSettingsBody,
    responses: {
      200: { description: 'Settings', schema: s.teamSettingsSchema },
      403: error('Role may not change settings'),
      404: error('No such team'),
      422: error('Invalid fields'),
    },
    handler: (ctx) => teams.updateTeamSettings(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.body),
    present: presentTeamSettings,
  }),
  defineRoute({
    method: 'delete',
    path: '/teams/{id}',
    operationId: 'deleteTeam',
    summary: 'Deletes a team once nothing is left in it',
    description:
      'Only an owner. Refused with 409 team_not_empty (its message and `left` name what remains) while the team has projects, ' +
      'members other than the caller, open invitations, or active access tokens of other people.',
    tags,
    auth: 'session',
    permission: 'team:delete',
    scope: scopes.team,
    params: s.idParams,
    responses: {
      204: { description: 'Deleted' },
      403: error('Not an owner'),
      404: error('No such team'),
      409: error('team_not_empty'),
    },
    async handler(ctx) {
      await teams.deleteTeam(ctx.deps, ctx.actor, ctx.input.params.id);
      ctx.status = 204;
    },
  }),
];

const peopleRoutes = [
  defineRoute({
    method: 'get',
    path: '/teams/{id}/people',
    operationId: 'listTeamPeople',
    summary: "The team's members and its pending invitations",
    description:
      '`data` lists memberships (`id` is the membership id); `invitations` lists invitations neither accepted nor revoked ' +
      '(`status` open or expired; an expired one can be renewed); `assignable_roles` are the roles the caller may give.',
    tags,
    auth: 'session',
    permission: 'members:read',
    scope: scopes.team,
    params: s.idParams,
    responses: { 200: { description: 'People', schema: s.peopleSchema }, 404: error('No such team') },
    async handler(ctx) {
      return people.listPeople(ctx.deps, ctx.actor, ctx.input.params.id);
    },
    present: presentPeople,
  }),
  defineRoute({
    method: 'post',
    path: '/teams/{id}/invitations',
    operationId: 'createTeamInvitation',
    summary: 'Invites an e-mail address to the team with a role; the invitation is e-mailed and runs 7 days',
    description:
      'Admins and owners; only owners invite owners. An address that is already a member is refused (409, fields.email). ' +
      'A second invitation for an address with one pending replaces it: the earlier one is revoked. ' +
      'The e-mail is sent before anything is kept: when it cannot be sent the answer is 503 mail_not_sent and nothing changes.',
    tags,
    auth: 'session',
    permission: 'members:invite',
    scope: scopes.team,
    params: s.idParams,
    body: s.createInvitationBody,
    responses: {
      201: { description: 'The invitation', schema: s.invitationSchema },
      403: error('Role may not invite (with that role)'),
      404: error('No such team'),
      409: error('Already a member'),
      422: error('Invalid fields'),
      429: error('rate_limited: more than INVITATIONS_PER_HOUR invitations from this address (Retry-After)'),
      503: error('mail_not_sent'),
    },
    async handler(ctx) {
      await ctx.deps.guards.consumeCreation('invitations', ctx.ip);
      ctx.status = 201;
      return people.createInvitation(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.body);
    },
    present: presentInvitation,
  }),
  defineRoute({
    method: 'post',
    path: '/invitations/{id}/renew',
    operationId: 'renewInvitation',
    description:
      'Gives a pending invitation another 7 days and e-mails it again; an accepted or revoked one is 409 `invitation_not_open`. Renewals count toward the invitations a client address may send an hour (then 429 with `Retry-After`).',
    summary: 'Renews a pending invitation for 7 days from now and e-mails it again',
    tags,
    auth: 'session',
    permission: 'members:invite',
    scope: scopes.invitation,
    params: s.idParams,
    responses: {
      200: { description: 'The invitation', schema: s.invitationSchema },
      403: error('Role may not'),
      404: error('No such invitation'),
      409: error('invitation_not_open (accepted or revoked)'),
      429: error(
        'rate_limited: more than INVITATIONS_PER_HOUR invitations (new or renewed) from this address (Retry-After)',
      ),
      503: error('mail_not_sent'),
    },
    async handler(ctx) {
      await ctx.deps.guards.consumeCreation('invitations', ctx.ip);
      return people.renewInvitation(ctx.deps, ctx.actor, ctx.input.params.id);
    },
    present: presentInvitation,
  }),
  defineRoute({
    method: 'delete',
    path: '/invitations/{id}',
    operationId: 'revokeInvitation',
    description:
      "Withdraws a pending invitation so that it can no longer be accepted; an accepted or revoked one is 409 `invitation_not_open`. Written to the team's activity (`access`).",
    summary: 'Revokes a pending invitation',
    tags,
    auth: 'session',
    permission: 'members:invite',
    scope: scopes.invitation,
    params: s.idParams,
    responses: {
      204: { description: 'Revoked' },
      403: error('Role may not'),
      404: error('No such invitation'),
      409: error('invitation_not_open (accepted or revoked)'),
    },
    async handler(ctx) {
      await people.revokeInvitation(ctx.deps, ctx.actor, ctx.input.params.id);
      ctx.status = 204;
    },
  }),
  defineRoute({
    method: 'post',
    path: '/invitations/{id}/accept',
    operationId: 'acceptInvitation',
    summary: 'Accepts an invitation; only the signed-in account whose confirmed address was invited',
    description:
      'Any other account gets 404 (the invitation is not revealed); the invited account with an unconfirmed address gets ' +
      '403 email_not_confirmed; an expired, revoked or accepted invitation gets 409 invitation_not_open.',
    tags,
    auth: 'session',
    params: s.idParams,
    responses: {
      200: { description: 'The new membership', schema: s.membershipSchema },
      403: error('email_not_confirmed'),
      404: error('No such invitation for this account'),
      409: error('invitation_not_open'),
    },
    async handler(ctx) {
      return people.acceptInvitation(ctx.deps, ctx.actor, ctx.input.params.id);
    },
    present: presentMembership,
  }),
  defineRoute({
    method: 'patch',
    path: '/memberships/{id}',
    operationId: 'updateMembership',
    summary: "Changes a member's role",
    description:
      'Admins and owners; only owners make or unmake owners. The last owner cannot be demoted (409 last_owner).',
    tags,
    auth: 'session',
    permission: 'members:manage',
    scope: scopes.membership,
    params: s.idParams,
    body: s.updateMembershipBody,
    responses: {
      200: { description: 'The membership', schema: s.membershipSchema },
      403: error('Role may not'),
      404: error('No such membership'),
      409: error('last_owner'),
      422: error('Invalid role'),
    },
    async handler(ctx) {
      return people.updateMembership(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.body);
    },
    present: presentMembership,
  }),
  defineRoute({
    method: 'delete',
    path: '/memberships/{id}',
    operationId: 'deleteMembership',
    summary: 'Removes a member from the team, or leaves it (your own membership)',
    description:
      'Admins and owners remove members (only owners remove owners); anyone may leave. The last owner cannot leave (409 last_owner).',
    tags,
    auth: 'session',
    // Removing a membership: members:manage, or anyone leaving the team themselves (the service decides).
    permission: undefined,
    params: s.idParams,
    responses: {
      204: { description: 'Removed' },
      403: error('Role may not'),
      404: error('No such membership'),
      409: error('last_owner'),
    },
    async handler(ctx) {
      await people.deleteMembership(ctx.deps, ctx.actor, ctx.input.params.id);
      ctx.status = 204;
    },
  }),
];

export const routes: RouteDef[] = [...teamRoutes, ...peopleRoutes] as RouteDef[];
