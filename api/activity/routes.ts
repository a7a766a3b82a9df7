import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { scopes } from '../lib/scopes';
import * as s from './schemas';
import { listActivity } from './service';

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/teams/{id}/activity',
    operationId: 'listActivity',
    summary: "The team's activity, newest first: every task and every change that is not a task",
    description:
      'Filters project, environment, kind (deployments, backups, machines, configuration, maintenance, access), type; `limit` 1-100 ' +
      '(default 50); pass `next_before` back as `before` for the next page.',
    tags: ['activity'],
    auth: 'session',
    permission: 'activity:read',
    scope: scopes.team,
    params: s.idParams,
    query: s.activityQuery,
    responses: {
      200: { description: 'A page of events', schema: s.activityPageSchema },
      404: error('No such team'),
      422: error('Invalid filter or cursor'),
    },
    async handler(ctx) {
      ctx.body = await listActivity(ctx.deps, ctx.input.params.id, ctx.input.query);
    },
  }),
] as RouteDef[];
