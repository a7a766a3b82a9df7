import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { scopes } from '../lib/scopes';
import * as s from './schemas';
import { getEnvironmentEdge, updateEnvironmentEdge } from './environment-service';
import { getProjectEdge, updateProjectEdge } from './project-service';
import { idParams } from '../lib/params';
import { presentEnvironmentEdge, presentProjectEdge } from './presenter';

const tags = ['edge'];
const EDGE_UNAVAILABLE = 'edge_unavailable: an edge did not apply the change within 10 s; the change is saved';

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/environments/{id}/edge',
    operationId: 'getEnvironmentEdge',
    description:
      'The edge rules of one environment: the allowed client addresses, whether a Basic password is set (it is never shown) and whether clients stick to one instance.',
    summary: "The environment's edge: allowed addresses, password (never shown) and stickiness",
    tags,
    auth: 'session',
    permission: 'config:read',
    scope: scopes.environment,
    params: idParams,
    responses: { 200: { description: 'The edge', schema: s.environmentEdgeSchema }, 404: error('No such environment') },
    async handler(ctx) {
      return getEnvironmentEdge(ctx.deps, ctx.input.params.id);
    },
    present: presentEnvironmentEdge,
  }),
  defineRoute({
    method: 'patch',
    path: '/environments/{id}/edge',
    operationId: 'updateEnvironmentEdge',
    summary: "Changes the environment's edge",
    description:
      'allowed_addresses: CIDRs (empty: everyone); a client outside a non-empty list gets 403. password: {username, password} or null; ' +
      'without the right Basic credentials a request gets 401 with WWW-Authenticate. stickiness: a cookie keeps a client on one instance. ' +
      'Answered once every edge serves the change (the very next request sees it); past 10 s, 503 edge_unavailable: the change is saved and applied when the edge is back.',
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
      503: error(EDGE_UNAVAILABLE),
    },
    async handler(ctx) {
      return updateEnvironmentEdge(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body);
    },
    present: presentEnvironmentEdge,
  }),
  defineRoute({
    method: 'get',
    path: '/projects/{id}/edge',
    operationId: 'getProjectEdge',
    description:
      'The edge rules every environment of the project shares: blocked addresses and user agents, a rate limit per client address, HSTS, compression, and the maintenance and error pages the edge serves.',
    summary: "The project's edge: blocked addresses and user agents, rate limit, HSTS, compression, pages",
    tags,
    auth: 'session',
    permission: 'config:read',
    scope: scopes.project,
    params: idParams,
    responses: { 200: { description: 'The edge', schema: s.projectEdgeSchema }, 404: error('No such project') },
    async handler(ctx) {
      return getProjectEdge(ctx.deps, ctx.input.params.id);
    },
    present: presentProjectEdge,
  }),
  defineRoute({
    method: 'patch',
    path: '/projects/{id}/edge',
    operationId: 'updateProjectEdge',
    summary: "Changes the project's edge in one save",
    description:
      'Every part is checked and any fault is refused with 422 naming each (`blocked_addresses.2`, `rate_limit.requests`, ...); ' +
      'nothing is kept then. Applied on every environment of the project: blocked addresses and user agents (substring, ' +
      'case-insensitive) get 403; past `requests` in a `per_seconds` window a client address gets 429 with Retry-After; HSTS is ' +
      'sent only on HTTPS requests; text answers are gzip- or br-compressed; the error page replaces 502/503/504 of the edge. ' +
      'Answered once every edge serves the change (the very next request sees it); past 10 s, 503 edge_unavailable: the change is saved and applied when the edge is back.',
    tags,
    auth: 'session',
    permission: 'config:write',
    scope: scopes.project,
    params: idParams,
    body: s.projectEdgeBody,
    responses: {
      200: { description: 'The edge', schema: s.projectEdgeSchema },
      403: error('Role may not'),
      404: error('No such project'),
      422: error('Invalid parts, each named'),
      503: error(EDGE_UNAVAILABLE),
    },
    async handler(ctx) {
      return updateProjectEdge(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body);
    },
    present: presentProjectEdge,
  }),
] as RouteDef[];
