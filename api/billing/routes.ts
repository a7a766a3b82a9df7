import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { scopes } from '../lib/scopes';
import * as s from './schemas';
import * as billing from './service';
import * as subscriptions from './subscriptions-service';
import { presentBilling, presentSubscription } from './presenter';

const tags = ['billing'];

export const routes: RouteDef[] = [
  defineRoute({
    method: 'post',
    path: '/billing/address-format',
    operationId: 'getAddressFormat',
    summary: 'How a country writes a postal address: its fields, which are required, and their lines',
    description:
      "From Google's address data (libaddressinput). The billing details use the field names given here; " +
      '`choices` lists the accepted regions where the country has a fixed list.',
    tags,
    auth: 'session',
    body: s.addressFormatBody,
    responses: { 200: { description: 'The format', schema: s.addressFormatSchema }, 422: error('Unknown country') },
    async handler(ctx) {
      ctx.body = await billing.getAddressFormat(ctx.input.body.country);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/teams/{id}/billing',
    operationId: 'getTeamBilling',
    description:
      'The billing address and details, every subscription with its price, and the monthly total. Owners only.',
    summary: 'The billing details, the subscriptions and the monthly total',
    tags,
    auth: 'session',
    permission: 'team:billing',
    scope: scopes.team,
    params: s.idParams,
    responses: {
      200: { description: 'Billing', schema: s.billingSchema },
      403: error('Not an owner'),
      404: error('No such team'),
    },
    async handler(ctx) {
      return billing.getBilling(ctx.deps, ctx.scope.teamId);
    },
    present: presentBilling,
  }),
  defineRoute({
    method: 'post',
    path: '/teams/{id}/billing',
    operationId: 'saveTeamBilling',
    summary: "Saves the billing details; the address is checked against its country's format",
    description:
      '`name`, `email`, `country` (ISO 3166-1 alpha-2), `vat_id`, and the address fields POST /billing/address-format names ' +
      'for that country. Every missing or malformed field is named in one 422; nothing is kept then.',
    tags,
    auth: 'session',
    permission: 'team:billing',
    scope: scopes.team,
    params: s.idParams,
    body: s.billingBody,
    responses: {
      200: { description: 'Billing', schema: s.billingSchema },
      403: error('Not an owner'),
      404: error('No such team'),
      422: error('Missing or invalid fields'),
    },
    async handler(ctx) {
      return billing.saveBilling(ctx.deps, ctx.actor, ctx.scope.teamId, ctx.input.body);
    },
    present: presentBilling,
  }),
  defineRoute({
    method: 'get',
    path: '/teams/{id}/subscriptions/{order}/cancel',
    operationId: 'getSubscriptionCancel',
    description:
      'The first of the two calls of cancelling: what the subscription covers, what ends with it and when. Owners only; the POST needs `confirm: true`.',
    summary: 'What cancelling a subscription ends, and when',
    tags,
    auth: 'session',
    permission: 'team:billing',
    scope: scopes.team,
    params: s.orderParams,
    responses: {
      200: { description: 'What ends', schema: s.cancelPreviewSchema },
      403: error('Not an owner'),
      404: error('No such order'),
    },
    async handler(ctx) {
      ctx.body = await subscriptions.previewCancel(ctx.deps, ctx.scope.teamId, ctx.input.params.order);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/teams/{id}/subscriptions/{order}/cancel',
    operationId: 'cancelSubscription',
    summary: 'Cancels a subscription at the end of its period (needs {"confirm": true})',
    description: 'The subscription runs until the end of its period, then ends and what it paid for is given back.',
    tags,
    auth: 'session',
    permission: 'team:billing',
    scope: scopes.team,
    params: s.orderParams,
    body: s.cancelBody,
    responses: {
      200: { description: 'The subscription, now cancelling', schema: s.subscriptionSchema },
      403: error('Not an owner'),
      404: error('No such order'),
      409: error('subscription_not_active'),
      422: error('confirm is not true'),
    },
    async handler(ctx) {
      return subscriptions.cancelSubscription(ctx.deps, ctx.actor, ctx.scope.teamId, ctx.input.params.order);
    },
    present: presentSubscription,
  }),
] as RouteDef[];
