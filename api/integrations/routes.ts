import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { scopes } from '../lib/scopes';
import * as s from './schemas';
import * as integrations from './service';
import { presentIntegration } from './presenter';

const tags = ['integrations'];

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/teams/{id}/integrations/new',
    operationId: 'getNewIntegrationChoices',
    description:
      'The kinds of integration (signed webhooks, Slack) and the events they can be told of, for connecting one with `POST /teams/{id}/integrations`.',
    summary: 'The kinds of integration a team can connect, and the events they can hear of',
    tags,
    auth: 'session',
    permission: 'integrations:manage',
    scope: scopes.team,
    params: s.idParams,
    responses: {
      200: { description: 'Kinds', schema: s.newIntegrationSchema },
      403: error('Role may not'),
      404: error('No such team'),
    },
    async handler(ctx) {
      ctx.body = integrations.newIntegrationChoices();
    },
  }),
  defineRoute({
    method: 'post',
    path: '/teams/{id}/integrations/fields',
    operationId: 'getIntegrationFields',
    description:
      'Takes `{kind}` and answers the fields that kind of integration asks for; an unknown kind is 422. Changes nothing.',
    summary: 'What one kind of integration asks for',
    tags,
    auth: 'session',
    permission: 'integrations:manage',
    scope: scopes.team,
    params: s.idParams,
    body: s.fieldsBody,
    responses: {
      200: { description: 'Fields', schema: s.fieldsSchema },
      403: error('Role may not'),
      404: error('No such team'),
      422: error('Unknown kind'),
    },
    async handler(ctx) {
      ctx.body = integrations.kindFields(ctx.input.body.kind);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/teams/{id}/integrations',
    operationId: 'createIntegration',
    summary: 'Connects a webhook or a Slack channel to hear of the events it names',
    description:
      'A webhook answers its signing secret (`whsec_...`) in `secret`, only here. Each event is POSTed as ' +
      '`{id, event, occurred_at, team_id, data}` signed as Standard Webhooks specify (`webhook-id`, `webhook-timestamp`, ' +
      '`webhook-signature`). A Slack integration posts `{text}` to its incoming-webhook URL.',
    tags,
    auth: 'session',
    permission: 'integrations:manage',
    scope: scopes.team,
    params: s.idParams,
    body: s.createBody,
    responses: {
      201: { description: 'The integration (with `secret` for a webhook)', schema: s.createdIntegrationSchema },
      403: error('Role may not'),
      404: error('No such team'),
      422: error('Invalid fields'),
    },
    async handler(ctx) {
      ctx.status = 201;
      return integrations.createIntegration(ctx.deps, ctx.actor, ctx.scope.teamId, ctx.input.body);
    },
    present: presentIntegration,
  }),
  defineRoute({
    method: 'get',
    path: '/teams/{id}/integrations',
    operationId: 'listIntegrations',
    description:
      "The team's integrations (kind, name, events, a webhook's URL with its secrets hidden), oldest first, so that each " +
      'can be opened, changed or disconnected with `/integrations/{id}`.',
    summary: "The team's integrations",
    tags,
    auth: 'session',
    permission: 'integrations:read',
    scope: scopes.team,
    params: s.idParams,
    responses: {
      200: { description: 'The integrations', schema: s.integrationListSchema },
      403: error('Role may not'),
      404: error('No such team'),
    },
    async handler(ctx) {
      return integrations.listIntegrations(ctx.deps, ctx.scope.teamId);
    },
    present: presentIntegration,
  }),
  defineRoute({
    method: 'get',
    path: '/integrations/{id}',
    operationId: 'getIntegration',
    description:
      "The integration's kind, name, events and URL (secrets never shown again), with its last deliveries and their outcomes.",
    summary: 'One integration and its last deliveries',
    tags,
    auth: 'session',
    permission: 'integrations:read',
    scope: scopes.integration,
    params: s.idParams,
    responses: {
      200: { description: 'The integration', schema: s.integrationSchema },
      403: error('Role may not'),
      404: error('No such integration'),
    },
    async handler(ctx) {
      return integrations.getIntegration(ctx.deps, ctx.input.params.id);
    },
    present: presentIntegration,
  }),
  defineRoute({
    method: 'post',
    path: '/integrations/{id}',
    operationId: 'updateIntegration',
    description:
      'Changes the name, events or URL given, for roles that manage integrations; a refused field is 422 naming it and nothing changes.',
    summary: 'Changes an integration: its name, events or URL',
    tags,
    auth: 'session',
    permission: 'integrations:manage',
    scope: scopes.integration,
    params: s.idParams,
    body: s.updateBody,
    responses: {
      200: { description: 'The integration', schema: s.integrationSchema },
      403: error('Role may not'),
      404: error('No such integration'),
      422: error('Invalid fields'),
    },
    async handler(ctx) {
      return integrations.updateIntegration(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body);
    },
    present: presentIntegration,
  }),
  defineRoute({
    method: 'delete',
    path: '/integrations/{id}',
    operationId: 'deleteIntegration',
    description: 'The integration hears of no more events; deliveries still being retried are dropped.',
    summary: 'Disconnects an integration; deliveries under way stop',
    tags,
    auth: 'session',
    permission: 'integrations:manage',
    scope: scopes.integration,
    params: s.idParams,
    responses: { 204: { description: 'Deleted' }, 403: error('Role may not'), 404: error('No such integration') },
    async handler(ctx) {
      await integrations.deleteIntegration(ctx.deps, ctx.actor, ctx.scope.row);
      ctx.status = 204;
    },
  }),
] as RouteDef[];
