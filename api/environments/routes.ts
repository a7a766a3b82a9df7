import { defineRoute, type RouteDef } from '../lib/define-route';
import { scopes } from '../lib/scopes';
import { idParams as projectParams } from '../projects/schemas';
import { presentDeletedEnvironment, presentEnvironment } from './presenter';
import * as s from './schemas';
import * as environments from './service';
import { errorResponse as error } from '../lib/responses';
import { DELETE_PROTECTED_SIGN_IN_MINUTES } from '../lib/recent-sign-in';
import { listDeletedEnvironments } from './deleted-service';

const tags = ['environments'];

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/projects/{id}/environments/choices',
    operationId: 'getEnvironmentChoices',
    summary: "What creating an environment in the project asks for: name rules and the repository's branches",
    description:
      'Blocked (`blocked: true`) with `reason` no_repository (no repository connected), repository_unreachable (git cannot read it now) ' +
      'or no_branches (nothing pushed yet).',
    tags,
    auth: 'session',
    permission: 'environment:create',
    scope: scopes.project,
    params: projectParams,
    responses: {
      200: { description: 'Choices, or a blocked answer', schema: s.environmentChoicesSchema },
      403: error('Role may not create environments'),
      404: error('No such project'),
    },
    async handler(ctx) {
      ctx.body = await environments.environmentChoices(ctx.deps, ctx.actor, ctx.input.params.id);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/projects/{id}/environments',
    operationId: 'createEnvironment',
    summary: 'Creates an environment of the project, served on a port of its own',
    description:
      'Names follow the project name rules and are unique in the project (409 on name). git_ref must be a branch, tag or commit id of the ' +
      'connected repository (422 on git_ref); no repository: 409 no_repository; repository unreadable: 409 repository_unreachable. ' +
      'The environment gets the lowest free port of the range (409 no_port_available when spent); `url` is where it is served. ' +
      'Its web server is placed on a machine with room for its plan; none has: 409 no_capacity, naming the largest plan that fits now.',
    tags,
    auth: 'session',
    permission: 'environment:create',
    scope: scopes.project,
    params: projectParams,
    body: s.createEnvironmentBody,
    responses: {
      201: { description: 'The environment', schema: s.environmentSchema },
      403: error('Role may not'),
      404: error('No such project'),
      409: error('Name taken, no_repository, repository_unreachable, no_port_available or no_capacity'),
      422: error('Invalid fields'),
    },
    async handler(ctx) {
      ctx.status = 201;
      return environments.createEnvironment(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.body);
    },
    present: (env) => presentEnvironment(env),
  }),
  defineRoute({
    method: 'get',
    path: '/environments',
    operationId: 'listEnvironments',
    summary: 'Environments the caller reaches (a token: its one team), newest first, a page at a time',
    description:
      'Filters team_id and project_id; `limit` 1-100 (default 100). `next_before` (null on the last page) is passed back as `before` ' +
      'for the next page; it is opaque.',
    tags,
    auth: 'token',
    permission: 'environment:read',
    query: s.listEnvironmentsQuery,
    responses: {
      200: { description: 'A page of environments', schema: s.environmentPageSchema },
      422: error('Invalid filter or cursor'),
    },
    async handler(ctx) {
      const page = await environments.listEnvironments(ctx.deps, ctx.actor, ctx.input.query);
      ctx.body = { data: page.rows.map((env) => presentEnvironment(env)), next_before: page.next_before };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/environments/{id}',
    operationId: 'getEnvironment',
    description: "Reachable with a personal access token, within its one team. Another team's environment is 404.",
    summary: 'One environment',
    tags,
    auth: 'token',
    permission: 'environment:read',
    scope: scopes.environment,
    params: s.idParams,
    responses: {
      200: { description: 'The environment', schema: s.environmentSchema },
      404: error('No such environment'),
    },
    async handler(ctx) {
      return environments.findEnvironment(ctx.deps, ctx.actor, ctx.input.params.id, 'environment:read');
    },
    present: (env) => presentEnvironment(env),
  }),
  defineRoute({
    method: 'patch',
    path: '/environments/{id}',
    operationId: 'updateEnvironment',
    summary: "Changes an environment's git_ref and/or auto_deploy",
    description: 'A new git_ref must be a branch, tag or commit id of the repository (422 on git_ref).',
    tags,
    auth: 'session',
    permission: 'environment:update',
    scope: scopes.environment,
    params: s.idParams,
    body: s.updateEnvironmentBody,
    responses: {
      200: { description: 'The environment', schema: s.environmentSchema },
      403: error('Role may not'),
      404: error('No such environment'),
      409: error('no_repository or repository_unreachable'),
      422: error('Invalid fields'),
    },
    async handler(ctx) {
      return environments.updateEnvironment(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.body);
    },
    present: (env) => presentEnvironment(env),
  }),
  defineRoute({
    method: 'delete',
    path: '/environments/{id}',
    operationId: 'deleteEnvironment',
    summary: 'Deletes an environment; its tasks, activity and snapshots are kept 30 days',
    description:
      'Refused with 409 deploy_in_progress (with task_id) while a task is pending or running on it. A protected environment ' +
      `needs its name as \`confirm\` (else 422 on confirm) and a sign-in of the last ${DELETE_PROTECTED_SIGN_IN_MINUTES} minutes ` +
      '(else 403 reauthentication_required; POST /session/reauthenticate renews it). The deletion is an activity event ' +
      '(configuration/environment_deleted); GET /projects/{id}/deleted-environments lists it for 30 days.',
    tags,
    auth: 'session',
    permission: 'environment:delete',
    scope: scopes.environment,
    params: s.idParams,
    body: s.deleteEnvironmentBody,
    responses: {
      204: { description: 'Deleted' },
      403: error('Role may not, or reauthentication_required'),
      404: error('No such environment'),
      409: error('deploy_in_progress'),
      422: error('confirm is not the name of the protected environment'),
    },
    async handler(ctx) {
      await environments.deleteEnvironment(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.body, ctx.ip);
      ctx.status = 204;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/projects/{id}/deleted-environments',
    operationId: 'listDeletedEnvironments',
    summary: "The project's environments deleted in the last 30 days, with their snapshots",
    description:
      'Their tasks stay readable at GET /tasks/{id}; a snapshot listed here may be restored into another environment of the ' +
      'project (POST /environments/{target}/backups/{snapshot}/restore). After `kept_until` the daily prune removes them.',
    tags,
    auth: 'session',
    permission: 'data:read',
    scope: scopes.project,
    params: projectParams,
    responses: {
      200: { description: 'Deleted environments, newest first', schema: s.deletedEnvironmentListSchema },
      404: error('No such project'),
    },
    async handler(ctx) {
      return listDeletedEnvironments(ctx.deps, ctx.input.params.id);
    },
    present: presentDeletedEnvironment,
  }),
] as RouteDef[];
