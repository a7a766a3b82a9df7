import { defineRoute, type RouteDef } from '../lib/define-route';
import { presentToken } from './presenter';
import { createTokenBody, issuedTokenSchema, tokenIdParams, tokenListSchema, tokenSchema } from './schemas';
import { issueToken, listTokens, revokeToken } from './service';

const tags = ['access tokens'];

export const routes: RouteDef[] = [
  defineRoute({
    method: 'post',
    path: '/me/tokens',
    operationId: 'createAccessToken',
    summary: 'Issue a personal access token for one of your teams; the string is shown in this answer only',
    description:
      'The token reaches its one team only, with your current role there. `expires_in_days` is 7, 30 or 90. ' +
      'A token cannot issue tokens (403 token_not_allowed).',
    tags,
    auth: 'session',
    body: createTokenBody,
    responses: {
      201: { description: 'The token, with its string (`token`), shown this once', schema: issuedTokenSchema },
      403: { description: 'token_not_allowed: a token cannot issue tokens' },
      422: { description: 'invalid: `purpose`, `team_id` (not a team you are a member of) or `expires_in_days`' },
    },
    async handler(ctx) {
      const { token, secret } = await issueToken(ctx.deps, ctx.actor, ctx.input.body);
      ctx.status = 201;
      ctx.set('Cache-Control', 'no-store');
      ctx.body = { ...presentToken(token), token: secret };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/me/tokens',
    operationId: 'listAccessTokens',
    description:
      'Every personal access token the caller issued, active, revoked and expired alike, so that what existed and when it was last used stays visible. The token strings are never shown again: only a digest is kept. A token cannot list or issue tokens.',
    summary: 'Your personal access tokens, newest first, revoked and expired ones included',
    tags,
    auth: 'session',
    responses: { 200: { description: 'Your tokens (never their strings)', schema: tokenListSchema } },
    async handler(ctx) {
      const now = new Date();
      ctx.body = { data: (await listTokens(ctx.deps, ctx.actor)).map((t) => presentToken(t, now)) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/me/tokens/{id}',
    operationId: 'revokeAccessToken',
    summary: 'Revoke one of your personal access tokens; it stays in the list as revoked',
    description: 'Revoking a token that is already revoked answers 200 with it unchanged.',
    tags,
    auth: 'session',
    params: tokenIdParams,
    responses: {
      200: { description: 'The token, revoked', schema: tokenSchema },
      404: { description: 'not_found: no such token of yours' },
    },
    async handler(ctx) {
      ctx.body = presentToken(await revokeToken(ctx.deps, ctx.actor, ctx.input.params.id));
    },
  }),
];
