import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorBodySchema, errorResponse as error } from '../lib/responses';
import { scopes } from '../lib/scopes';
import { taskSchema } from '../tasks/presenter';
import * as s from './schemas';
import * as r from './reshape-schemas';
import * as reshape from './reshape-service';

const tags = ['machines'];

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/environments/{id}/reshape',
    operationId: 'getEnvironmentReshape',
    summary: "Where the environment's database lives (combined or separate) and what it could change to, priced",
    description:
      '`combined`: the database is on the shared services server beside the web server; `separate`: on a `database` ' +
      'server of its own (shown in GET /servers). `choices` is empty when the environment has no postgresql service or ' +
      'still keeps the old database of the last reshape (`unavailable_reason` says which).',
    tags,
    auth: 'session',
    permission: 'machines:read',
    scope: scopes.environment,
    params: s.idParams,
    responses: {
      200: { description: 'Shape and choices', schema: r.reshapeSchema },
      404: error('No such environment'),
    },
    async handler(ctx) {
      ctx.body = await reshape.getReshape(ctx.deps, ctx.input.params.id);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/reshape/preview',
    operationId: 'previewEnvironmentReshape',
    description:
      "States what moving the environment's database to the given shape (combined or separate, with a plan) would change and what it would add to or take from the monthly bill. Nothing changes.",
    summary: 'What a reshape would change and cost a month (monthly_price_delta); changes nothing',
    tags,
    auth: 'session',
    permission: 'machines:write',
    scope: scopes.environment,
    params: s.idParams,
    body: r.reshapeBody,
    responses: {
      200: { description: 'The preview', schema: r.reshapePreviewSchema },
      403: error("forbidden: the caller's role may not change machines"),
      404: error('No such environment'),
      409: error('no_database_service, or old_database_kept'),
      422: error('The current shape, an unknown plan, or a plan with shape combined'),
    },
    async handler(ctx) {
      ctx.body = await reshape.previewReshape(ctx.deps, ctx.scope.row, ctx.input.body);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/reshape',
    operationId: 'reshapeEnvironment',
    summary: "Moves the environment's database to a server of its own, or back, its data copied (a task)",
    description:
      'Answers 202 with the task (`machines`/`reshape`). The data is copied (pg_dump | pg_restore) into a new database ' +
      'with a new login while writes pause, verified table by table, the web process restarted on the new DATABASE_URL ' +
      '(and PG*); the old database is kept, read-only, until POST /environments/{id}/discard-old-database. A failure ' +
      'leaves the database where it was. No service: 409 `no_database_service`; an old database still kept: 409 ' +
      '`old_database_kept`; the current shape: 422 on `shape`. One change at a time per environment: 409 ' +
      '`deploy_in_progress` or `task_in_progress` with `task_id`.',
    tags,
    auth: 'session',
    permission: 'machines:write',
    scope: scopes.environment,
    startsTask: true,
    params: s.idParams,
    body: r.reshapeBody,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error("forbidden: the caller's role may not change machines"),
      404: error('No such environment'),
      409: error('no_database_service, old_database_kept, deploy_in_progress or task_in_progress', errorBodySchema),
      422: error('The current shape, an unknown plan, or a plan with shape combined'),
    },
    async handler(ctx) {
      const task = await reshape.requestReshape(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body);
      return task;
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/discard-old-database',
    operationId: 'discardOldDatabase',
    summary: 'Drops the database the last reshape left behind, and ends its old server (a task)',
    description:
      'Answers 202 with the task (`machines`/`discard_old_database`). Irreversible: without `"confirm": true` 422 on ' +
      '`confirm`. No old database: 409 `no_old_database`.',
    tags,
    auth: 'session',
    permission: 'machines:write',
    scope: scopes.environment,
    startsTask: true,
    params: s.idParams,
    body: r.discardOldDatabaseBody,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error("forbidden: the caller's role may not change machines"),
      404: error('No such environment'),
      409: error('no_old_database'),
      422: error('confirm is not true'),
    },
    async handler(ctx) {
      const task = await reshape.requestDiscardOldDatabase(ctx.deps, ctx.actor, ctx.scope.row);
      return task;
    },
  }),
] as RouteDef[];
