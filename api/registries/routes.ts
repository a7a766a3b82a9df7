import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { scopes } from '../lib/scopes';
import * as s from './schemas';
import * as registries from './service';
import { presentRegistry } from './presenter';

const tags = ['projects'];

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/projects/{id}/registries',
    operationId: 'listProjectRegistries',
    description:
      "The private package and container registries the project's builds can pull from: host and user name of each; passwords are never shown.",
    summary:
      'The private package and container registries builds can pull from (hosts and user names; never passwords)',
    tags,
    auth: 'session',
    permission: 'config:read',
    scope: scopes.project,
    params: s.idParams,
    responses: { 200: { description: 'Registries', schema: s.registryListSchema }, 404: error('No such project') },
    async handler(ctx) {
      return registries.listRegistries(ctx.deps, ctx.input.params.id);
    },
    present: presentRegistry,
  }),
  defineRoute({
    method: 'post',
    path: '/projects/{id}/registries',
    operationId: 'saveProjectRegistry',
    description:
      'Stores the user name and password of one registry host, sealed at rest; builds get them as an `.npmrc` and a container auth file. Saving the same host again replaces its credentials.',
    summary:
      "Saves a registry's credentials (replacing those of the same host); builds get them as .npmrc and a container auth file",
    tags,
    auth: 'session',
    permission: 'config:write',
    scope: scopes.project,
    params: s.idParams,
    body: s.createBody,
    responses: {
      201: { description: 'The registry', schema: s.registrySchema },
      403: error('Role may not'),
      404: error('No such project'),
      422: error('Invalid fields'),
    },
    async handler(ctx) {
      ctx.status = 201;
      return registries.saveRegistry(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body);
    },
    present: presentRegistry,
  }),
  defineRoute({
    method: 'delete',
    path: '/projects/{id}/registries/{host}',
    operationId: 'deleteProjectRegistry',
    description: 'Forgets the credentials of one registry host; builds from then on go without them.',
    summary: "Forgets one registry's credentials",
    tags,
    auth: 'session',
    permission: 'config:write',
    scope: scopes.project,
    params: s.hostParams,
    responses: {
      204: { description: 'Forgotten' },
      403: error('Role may not'),
      404: error('No such project or registry'),
    },
    async handler(ctx) {
      await registries.deleteRegistry(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.params.host);
      ctx.status = 204;
    },
  }),
] as RouteDef[];
