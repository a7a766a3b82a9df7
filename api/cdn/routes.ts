import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { scopes } from '../lib/scopes';
import { startTask } from '../../core/tasks';
import { taskSchema } from '../tasks/schemas';
import * as s from './schemas';
import { getCdn, updateCdn } from './service';
import { idParams } from '../lib/params';

const tags = ['cdn'];

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/environments/{id}/cdn',
    operationId: 'getEnvironmentCdn',
    description:
      "Whether the edge caches this environment's public GET and HEAD answers, and the TTL used when an answer names none.",
    summary: "The environment's CDN: whether the edge caches, and the default TTL",
    tags,
    auth: 'session',
    permission: 'config:read',
    scope: scopes.environment,
    params: idParams,
    responses: { 200: { description: 'The CDN', schema: s.cdnSchema }, 404: error('No such environment') },
    async handler(ctx) {
      ctx.body = await getCdn(ctx.deps, ctx.input.params.id);
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/environments/{id}/cdn',
    operationId: 'updateEnvironmentCdn',
    summary: "Changes the environment's CDN",
    description:
      'When enabled, the edge caches GET and HEAD 200 answers whose Cache-Control has `public` (for its s-maxage, else ' +
      'max-age, else `default_ttl_seconds`), never those with `private`, `no-store`, `no-cache` or Set-Cookie, per path ' +
      'with query and the request headers named in Vary; answers carry `X-Cache: HIT` or `MISS`. The cache is in the ' +
      "edge's memory; the project's and environment's edge rules apply before an answer comes from it. Answered once " +
      'every edge serves the change; past 10 s, 503 edge_unavailable: the change is saved and applied when the edge is back.',
    tags,
    auth: 'session',
    permission: 'config:write',
    scope: scopes.environment,
    params: idParams,
    body: s.cdnBody,
    responses: {
      200: { description: 'The CDN', schema: s.cdnSchema },
      403: error('Role may not'),
      404: error('No such environment'),
      422: error('Invalid fields, each named (default_ttl_seconds)'),
      503: error('edge_unavailable: an edge did not apply the change within 10 s; the change is saved'),
    },
    async handler(ctx) {
      ctx.body = await updateCdn(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/cdn/clear',
    operationId: 'clearEnvironmentCdn',
    summary: "Empties the environment's CDN cache, under path prefixes or all of it",
    description:
      'A `configuration`/`cdn_clear` task. Each of `paths` is a prefix starting with `/` (`paths.N` names a bad one); ' +
      'without `paths` (or with none) everything is cleared. The task succeeds once every running edge has dropped ' +
      'the matching answers: after that, nothing cached before it is served.',
    tags,
    auth: 'session',
    permission: 'deploy',
    scope: scopes.environment,
    startsTask: true,
    params: idParams,
    body: s.cdnClearBody,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error('Role may not'),
      404: error('No such environment'),
      422: error('Invalid prefixes, each named (paths.1)'),
    },
    async handler(ctx) {
      const env = ctx.scope.row;
      const paths = [...new Set(ctx.input.body.paths ?? [])];
      const task = await startTask(ctx.deps, ctx.actor, {
        type: 'cdn_clear',
        teamId: env.team_id,
        projectId: env.project_id,
        environmentId: env.id,
        params: { paths },
        summary: paths.length
          ? `clear the CDN of ${env.name} under ${paths.join(', ')}`
          : `clear the CDN of ${env.name}`,
      });
      return task;
    },
  }),
] as RouteDef[];
