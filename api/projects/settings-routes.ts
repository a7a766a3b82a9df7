import { z } from 'zod';
import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { scopes } from '../lib/scopes';
import { resourceName } from './schemas';
import { getSettings, updateSettings } from './settings-service';
import { idParams } from '../lib/params';
import { presentSettings } from './presenter';

const settingsSchema = z.strictObject({
  name: z.string(),
  domain_allowance: z.number().int().describe('Domains the project may have (pending ones count)'),
  domain_allowance_is_default: z.boolean().describe('true: DOMAIN_ALLOWANCE applies'),
});
const settingsBody = z
  .strictObject({
    name: resourceName.optional(),
    domain_allowance: z
      .number()
      .int('must be a whole number')
      .min(0, 'must be 0 or more')
      .max(1000, 'must be at most 1000')
      .nullable()
      .optional(),
  })
  .refine((b) => b.name !== undefined || b.domain_allowance !== undefined, {
    message: 'give name, domain_allowance or both',
    path: ['body'],
  });

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/projects/{id}/settings',
    operationId: 'getProjectSettings',
    description:
      "The project's name and its domain allowance, and whether that allowance is the default (`DOMAIN_ALLOWANCE`) or the project's own.",
    summary: "The project's settings",
    tags: ['projects'],
    auth: 'session',
    permission: 'project:read',
    scope: scopes.project,
    params: idParams,
    responses: { 200: { description: 'Settings', schema: settingsSchema }, 404: error('No such project') },
    async handler(ctx) {
      return getSettings(ctx.deps, ctx.input.params.id);
    },
    present: (row, ctx) => presentSettings(ctx.deps.config, row),
  }),
  defineRoute({
    method: 'post',
    path: '/projects/{id}/settings',
    operationId: 'updateProjectSettings',
    description:
      'Changes only the fields given; `null` returns a field to its default. Any refused field is 422 naming it and nothing is saved.',
    summary: 'Changes the settings it is given (name, domain_allowance; null: back to the default)',
    tags: ['projects'],
    auth: 'session',
    permission: 'project:update',
    scope: scopes.project,
    params: idParams,
    body: settingsBody,
    responses: {
      200: { description: 'Settings', schema: settingsSchema },
      403: error('Role may not'),
      404: error('No such project'),
      409: error('Name taken in the team'),
      422: error('Invalid fields'),
    },
    async handler(ctx) {
      return updateSettings(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.body);
    },
    present: (row, ctx) => presentSettings(ctx.deps.config, row),
  }),
] as RouteDef[];
