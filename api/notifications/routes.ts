import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { sendWithEtag } from '../lib/etag';
import { scopes } from '../lib/scopes';
import * as s from './schemas';
import * as notifications from './service';
import * as rules from './rules';

const tags = ['notifications'];

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/teams/{id}/notifications',
    operationId: 'getTeamNotifications',
    summary: 'The two bells: what is waiting and what finished since the caller last looked, with their first rows',
    description:
      'Answers with an ETag; sending it back as If-None-Match answers 304 with no body while nothing changed.',
    tags,
    auth: 'session',
    permission: 'team:read',
    scope: scopes.team,
    params: s.idParams,
    responses: {
      200: { description: 'The bells', schema: s.notificationsSchema },
      304: { description: 'Unchanged' },
      404: error('No such team'),
    },
    async handler(ctx) {
      const { body, etag } = await notifications.getNotifications(ctx.deps, ctx.scope.teamId, ctx.actor.user.id);
      sendWithEtag(ctx, etag, body);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/teams/{id}/activity/seen',
    operationId: 'markTeamActivitySeen',
    description:
      'Per-user state: the finished bell of `GET /teams/{id}/notifications` starts again from now, for the caller only.',
    summary: "Marks the team's activity seen for the caller: the finished bell starts again from now",
    tags,
    auth: 'session',
    permission: 'team:read',
    scope: scopes.team,
    params: s.idParams,
    responses: { 204: { description: 'Marked' }, 404: error('No such team') },
    async handler(ctx) {
      await notifications.markActivitySeen(ctx.deps, ctx.scope.teamId, ctx.actor.user.id);
      ctx.status = 204;
    },
  }),
  defineRoute({
    method: 'post',
    path: '/teams/{id}/next-steps/hide',
    operationId: 'hideTeamNextSteps',
    description: "Per-user state: the caller no longer sees the team's next-steps checklist; other members still do.",
    summary:
      "Hides the team's next-steps checklist for the caller (GET /teams/{id}/settings then shows next_steps null)",
    tags,
    auth: 'session',
    permission: 'team:read',
    scope: scopes.team,
    params: s.idParams,
    responses: { 204: { description: 'Hidden' }, 404: error('No such team') },
    async handler(ctx) {
      await notifications.hideNextSteps(ctx.deps, ctx.scope.teamId, ctx.actor.user.id);
      ctx.status = 204;
    },
  }),
] as RouteDef[];

export const projectRuleRoutes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/projects/{id}/notifications',
    operationId: 'getProjectNotificationRules',
    description:
      "For each event (task succeeded, task failed, ...): whom the project e-mails (members, admins or nobody) and which of the team's integrations hear of it.",
    summary: "Who hears of the project's events: e-mail to members, admins or none, and which integrations",
    tags,
    auth: 'session',
    permission: 'config:read',
    scope: scopes.project,
    params: s.idParams,
    responses: { 200: { description: 'Rules', schema: rules.rulesSchema }, 404: error('No such project') },
    async handler(ctx) {
      ctx.body = { rules: await rules.projectRules(ctx.deps.knex, ctx.scope.row) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/projects/{id}/notifications',
    operationId: 'saveProjectNotificationRules',
    description:
      'Saves the rules of the events given in `rules`; events not given keep theirs. A rule that is refused is 422 and nothing is saved.',
    summary: 'Saves the rules of the events given; the others keep theirs',
    tags,
    auth: 'session',
    permission: 'config:write',
    scope: scopes.project,
    params: s.idParams,
    body: rules.rulesBody,
    responses: {
      200: { description: 'Rules', schema: rules.rulesSchema },
      403: error('Role may not'),
      404: error('No such project'),
      422: error('Invalid rules'),
    },
    async handler(ctx) {
      ctx.body = await rules.saveRules(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body);
    },
  }),
] as RouteDef[];
