import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { scopes } from '../lib/scopes';
import { taskSchema } from '../tasks/presenter';
import * as s from './schemas';
import * as services from './service';
import { presentService } from './presenter';

const tags = ['services'];

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/environments/{id}/services/choices',
    operationId: 'getServiceChoices',
    description: 'The kinds of service (PostgreSQL), their versions and plans with monthly prices, for adding one.',
    summary: 'The kinds of service an environment can have, their versions and plans with monthly prices',
    tags,
    auth: 'session',
    permission: 'data:read',
    scope: scopes.environment,
    params: s.idParams,
    responses: { 200: { description: 'Choices', schema: s.serviceChoicesSchema }, 404: error('No such environment') },
    async handler(ctx) {
      ctx.body = await services.serviceChoices(ctx.deps);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/services/preview',
    operationId: 'previewService',
    description: 'States what adding the service would create and what it adds to the monthly bill; nothing changes.',
    summary: 'What adding the service would change and cost a month; changes nothing',
    tags,
    auth: 'session',
    permission: 'data:write',
    scope: scopes.environment,
    params: s.idParams,
    body: s.serviceBody,
    responses: {
      200: { description: 'The preview', schema: s.previewSchema },
      403: error('Role may not'),
      404: error('No such environment'),
      422: error('Invalid fields'),
    },
    async handler(ctx) {
      ctx.body = await services.previewService(ctx.deps, ctx.scope.row, ctx.input.body);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/services',
    operationId: 'createService',
    summary: 'Adds a database service to the environment: 202 with the machines/service_create task',
    description:
      'A postgresql service is a database with its own login; the environment gets DATABASE_URL and PG* for it. One per kind (409 service_exists). ' +
      "A services server the sandboxes cannot reach (as the worker of the environment's host found it at its start) is refused with 409 services_unreachable, naming that host and saying why and which setting to change.",
    tags,
    auth: 'session',
    permission: 'data:write',
    scope: scopes.environment,
    startsTask: true,
    params: s.idParams,
    body: s.serviceBody,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error('Role may not'),
      404: error('No such environment'),
      409: error('service_exists, or services_unreachable'),
      422: error('Invalid fields'),
    },
    async handler(ctx) {
      return services.createService(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/environments/{id}/services',
    operationId: 'listServices',
    description:
      "The environment's services; their credentials are never shown (the environment's processes get them as `DATABASE_URL` and `PG*`).",
    summary: "The environment's services",
    tags,
    auth: 'session',
    permission: 'data:read',
    scope: scopes.environment,
    params: s.idParams,
    responses: { 200: { description: 'Services', schema: s.serviceListSchema }, 404: error('No such environment') },
    async handler(ctx) {
      return services.listServices(ctx.deps, ctx.input.params.id);
    },
    present: presentService,
  }),
] as RouteDef[];
