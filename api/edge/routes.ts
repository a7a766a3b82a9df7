import { z } from 'zod';
import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { scopes } from '../lib/scopes';
import * as s from './schemas';
import { getEnvironmentEdge, updateEnvironmentEdge } from './environment-edge';

const tags = ['edge'];
const idParams = z.object({ id: z.uuid() });

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/environments/{id}/edge',
    operationId: 'getEnvironmentEdge',
    summary: "The environment's edge: allowed addresses, password (never shown) and stickiness",
    tags,
    auth: 'session',
    permission: 'config:read',
    scope: scopes.environment,
    params: idParams,
    responses: { 200: { description: 'The edge', schema: s.environmentEdgeSchema }, 404: error('No such environment') },
    async handler(ctx) {
      ctx.body = await getEnvironmentEdge(ctx.deps, ctx.input.params.id);
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/environments/{id}/edge',
    operationId: 'updateEnvironmentEdge',
    summary: "Changes the environment's edge",
    description:
      'allowed_addresses: CIDRs (empty: everyone); a client outside a non-empty list gets 403. password: {username, password} or null; ' +
      'without the right Basic credentials a request gets 401 with WWW-Authenticate. stickiness: a cookie keeps a client on one instance.',
    tags,
    auth: 'session',
    permission: 'config:write',
    scope: scopes.environment,
    params: idParams,
    body: s.environmentEdgeBody,
    responses: {
      200: { description: 'The edge', schema: s.environmentEdgeSchema },
      403: error('Role may not'),
      404: error('No such environment'),
      422: error('Invalid fields, each named (allowed_addresses.2, password.password)'),
    },
    async handler(ctx) {
      ctx.body = await updateEnvironmentEdge(ctx.deps, ctx.actor, ctx.scope.row as never, ctx.input.body);
    },
  }),
] as RouteDef[];
