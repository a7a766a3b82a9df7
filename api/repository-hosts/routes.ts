import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { scopes } from '../lib/scopes';
import * as s from './schemas';
import * as hosts from './service';
import { presentRepositoryHost } from './presenter';

const tags = ['repository hosts'];

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/teams/{id}/repository-hosts/new',
    operationId: 'getNewRepositoryHostChoices',
    description:
      'The kinds of repository host (`https` with a token, `ssh` with a key pair the console makes) and the fields each asks for.',
    summary: 'The kinds of repository host a team can add, and the fields of each',
    tags,
    auth: 'session',
    permission: 'integrations:manage',
    scope: scopes.team,
    params: s.idParams,
    responses: {
      200: { description: 'Kinds', schema: s.newHostSchema },
      403: error('Role may not'),
      404: error('No such team'),
    },
    async handler(ctx) {
      ctx.body = hosts.newHostChoices();
    },
  }),
  defineRoute({
    method: 'get',
    path: '/teams/{id}/repository-hosts',
    operationId: 'listRepositoryHosts',
    description:
      "The team's repository hosts with kind, host and user name, and for `ssh` the public key to add as a deploy key; tokens and private keys are never shown.",
    summary: "The team's repository hosts (never their tokens or private keys)",
    tags,
    auth: 'session',
    permission: 'integrations:read',
    scope: scopes.team,
    params: s.idParams,
    responses: {
      200: { description: 'Hosts', schema: s.hostListSchema },
      403: error('Role may not'),
      404: error('No such team'),
    },
    async handler(ctx) {
      return hosts.listRepositoryHosts(ctx.deps, ctx.scope.teamId);
    },
    present: presentRepositoryHost,
  }),
  defineRoute({
    method: 'post',
    path: '/teams/{id}/repository-hosts',
    operationId: 'createRepositoryHost',
    summary: 'Adds a repository host: https with a token, or ssh with a key pair the console makes',
    description:
      "The team's repositories on that host are cloned and fetched with it when their project was connected " +
      'without credentials of its own. `https` answers without the token; `ssh` answers `public_key`, ' +
      'to add on the host as a deploy key.',
    tags,
    auth: 'session',
    permission: 'integrations:manage',
    scope: scopes.team,
    params: s.idParams,
    body: s.createBody,
    responses: {
      201: { description: 'The host', schema: s.hostSchema },
      403: error('Role may not'),
      404: error('No such team'),
      422: error('Invalid fields, or the team has this host already'),
    },
    async handler(ctx) {
      ctx.status = 201;
      return hosts.createRepositoryHost(ctx.deps, ctx.actor, ctx.scope.teamId, ctx.input.body);
    },
    present: presentRepositoryHost,
  }),
  defineRoute({
    method: 'delete',
    path: '/repository-hosts/{id}',
    operationId: 'deleteRepositoryHost',
    description:
      'Deletes the host\'s token or private key; projects that used it fail their next git call with "authentication failed". Written to the team\'s activity.',
    summary: 'Removes a repository host; its token or key is deleted and no longer used',
    tags,
    auth: 'session',
    permission: 'integrations:manage',
    scope: scopes.repositoryHost,
    params: s.idParams,
    responses: { 204: { description: 'Deleted' }, 403: error('Role may not'), 404: error('No such repository host') },
    async handler(ctx) {
      await hosts.deleteRepositoryHost(ctx.deps, ctx.actor, ctx.scope.row);
      ctx.status = 204;
    },
  }),
] as RouteDef[];
