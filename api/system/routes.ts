import { z } from 'zod';
import { defineRoute, type RouteDef } from '../lib/define-route';
import { buildOpenApi } from '../lib/openapi';
import { renderDocsPage } from './docs-page';

let cached: { doc: unknown; key: RouteDef[] } | undefined;

export const routes = [
  defineRoute({
    method: 'get',
    path: '/openapi.json',
    operationId: 'getOpenApiDocument',
    summary: 'The OpenAPI 3.1 document of this API, generated from the route table',
    tags: ['system'],
    auth: 'none',
    responses: { 200: { description: 'OpenAPI document', schema: z.object({ openapi: z.string() }).loose() } },
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
    summary: 'Liveness and database reachability',
    tags: ['system'],
    auth: 'none',
    responses: { 200: { description: 'Healthy', schema: z.object({ status: z.literal('ok') }) } },
    async handler(ctx) {
      await ctx.deps.knex.raw('select 1');
      ctx.body = { status: 'ok' };
    },
  }),
];
