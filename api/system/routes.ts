import { z } from 'zod';
import { defineRoute, type RouteDef } from '../lib/define-route';
import { buildOpenApi } from '../lib/openapi';
import { isOperator } from '../lib/operator';
import { renderDocsPage } from './docs-page';
import { CHECK_TIMEOUT_MS, checkHealth, healthSchema } from './health';
import { WORKER_STALE_MS } from '../../core/worker-readiness';

let cached: { doc: unknown; key: RouteDef[] } | undefined;

export const routes = [
  defineRoute({
    method: 'get',
    path: '/openapi.json',
    operationId: 'getOpenApiDocument',
    description:
      'Built in-process from the route table, so it always matches what the API accepts: every operation with its parameters, bodies, answers, the permission it needs (`x-permission`) and whether a personal access token reaches it (`x-token-reachable`). Needs no sign-in.',
    summary: 'The OpenAPI 3.1 document of this API, generated from the route table',
    tags: ['system'],
    auth: 'none',
    responses: { 200: { description: 'OpenAPI document', schema: z.strictObject({ openapi: z.string() }).loose() } },
    handler(ctx) {
      const table = ctx.state.routeTable as RouteDef[];
      if (cached?.key !== table) cached = { key: table, doc: buildOpenApi(table, ctx.deps.config.baseUrl) };
      ctx.body = cached.doc;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/docs',
    operationId: 'getApiDocs',
    description: 'An HTML rendering of the same OpenAPI document, one section per endpoint. Needs no sign-in.',
    summary: 'A readable page of every endpoint, for people',
    tags: ['system'],
    auth: 'none',
    responses: { 200: { description: 'HTML page', contentType: 'text/html' } },
    handler(ctx) {
      const table = ctx.state.routeTable as RouteDef[];
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = renderDocsPage(buildOpenApi(table, ctx.deps.config.baseUrl));
    },
  }),
  defineRoute({
    method: 'get',
    path: '/health',
    operationId: 'getHealth',
    summary: 'Health of each component: the database, Temporal and the workers',
    description:
      '200 while this API can serve (its database answers), `status` `ok` when every component is, else `degraded`; ' +
      '503 `unavailable` when the database does not answer. A worker is `ok` while one has reported ready within the last ' +
      `${WORKER_STALE_MS / 1000} seconds. Each check is bounded by ${CHECK_TIMEOUT_MS} ms. The host's settings and ` +
      "`npm start`'s processes are shown to the operator only: a loopback client whose request has no `X-Forwarded-For` or `Forwarded` while TRUST_PROXY_HOPS is 0, or with `Authorization: Bearer $METRICS_TOKEN` when that is set.",
    tags: ['system'],
    auth: 'none',
    responses: {
      200: { description: 'Serving; `status` says whether every component is', schema: healthSchema },
      503: { description: 'The database does not answer', schema: healthSchema },
    },
    async handler(ctx) {
      const health = await checkHealth(ctx.deps);
      ctx.set('Cache-Control', 'no-store');
      ctx.status = health.components.database.status === 'ok' ? 200 : 503;
      // the host's own details (settings with their paths, processes with their pids) are the operator's
      const { settings: _settings, processes: _processes, ...everyone } = health;
      ctx.body = isOperator(ctx, ctx.deps.config) ? health : everyone;
    },
  }),
];
