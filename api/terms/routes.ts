import { z } from 'zod';
import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { scopes } from '../lib/scopes';
import { errors } from '../../core/errors';
import { recordActivity } from '../../db/queries/activity';
import type { Deps } from '../../system/deps';
import { idParams } from '../lib/params';

/** The version of the project terms in force; accepting means accepting this one. */
const TERMS_VERSION = '2026-01-01';

const tags = ['projects'];
const acceptBody = z.strictObject({ version: z.string().trim().min(1, 'must not be empty').max(40) });
const termsSchema = z.strictObject({
  version: z.string().describe('The version in force'),
  accepted: z
    .strictObject({
      version: z.string(),
      by: z.strictObject({ id: z.uuid(), name: z.string() }).nullable(),
      at: z.string(),
    })
    .nullable()
    .describe('The last acceptance, of whichever version'),
});

async function readTerms(deps: Deps, projectId: string) {
  const last = await deps
    .knex('project_terms_acceptances as a')
    .leftJoin('users as u', 'u.id', 'a.user_id')
    .where('a.project_id', projectId)
    .orderBy([
      { column: 'a.accepted_at', order: 'desc' },
      { column: 'a.id', order: 'desc' },
    ])
    .first('a.version', 'a.user_id', 'u.name', 'a.accepted_at');
  return {
    version: TERMS_VERSION,
    accepted: last
      ? {
          version: last.version,
          by: last.user_id ? { id: last.user_id, name: last.name } : null,
          at: last.accepted_at.toISOString(),
        }
      : null,
  };
}

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/projects/{id}/terms',
    operationId: 'getProjectTerms',
    description: 'The version of the terms in force for the project, and who accepted which version and when.',
    summary: 'The version of the terms in force and who accepted which version, when',
    tags,
    auth: 'session',
    permission: 'project:read',
    scope: scopes.project,
    params: idParams,
    responses: { 200: { description: 'Terms', schema: termsSchema }, 404: error('No such project') },
    async handler(ctx) {
      ctx.body = await readTerms(ctx.deps, ctx.input.params.id);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/projects/{id}/terms',
    operationId: 'acceptProjectTerms',
    description:
      'Records that the caller accepts the terms for the project; a `version` other than the one in force (from `GET`) is refused with 422, so nobody accepts terms they did not see.',
    summary: 'Accepts the terms in force for the project; `version` must be the one GET names',
    tags,
    auth: 'session',
    permission: 'project:update',
    scope: scopes.project,
    params: idParams,
    body: acceptBody,
    responses: {
      200: { description: 'Terms', schema: termsSchema },
      403: error('Role may not'),
      404: error('No such project'),
      422: error('Not the version in force'),
    },
    async handler(ctx) {
      if (ctx.input.body.version !== TERMS_VERSION)
        throw errors.invalid({ version: `must be the version in force, ${TERMS_VERSION}` });
      await ctx.deps.knex.transaction(async (trx) => {
        await trx('project_terms_acceptances').insert({
          project_id: ctx.input.params.id,
          version: TERMS_VERSION,
          user_id: ctx.actor.user.id,
        });
        await recordActivity(trx, {
          teamId: ctx.scope.teamId,
          actor: ctx.actor,
          kind: 'configuration',
          type: 'terms_accepted',
          projectId: ctx.input.params.id,
          summary: `Terms ${TERMS_VERSION} accepted`,
        });
      });
      ctx.body = await readTerms(ctx.deps, ctx.input.params.id);
    },
  }),
] as RouteDef[];
