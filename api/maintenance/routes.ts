import { z } from 'zod';
import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { scopes } from '../lib/scopes';
import { startTask } from '../../core/tasks';
import { taskSchema } from '../tasks/schemas';
import { MAX_MAINTENANCE_NOTE } from '../../core/edge-pages';
import { idParams } from '../lib/params';

const body = z.strictObject({
  maintenance: z.boolean(),
  note: z
    .string()
    .max(MAX_MAINTENANCE_NOTE, `must be at most ${MAX_MAINTENANCE_NOTE} characters`)
    .optional()
    .describe('Shown where the maintenance page has {{note}}'),
});

export const routes: RouteDef[] = [
  defineRoute({
    method: 'post',
    path: '/environments/{id}/maintenance',
    operationId: 'setEnvironmentMaintenance',
    summary: 'Turns maintenance on (the edge answers 503 with the maintenance page and the note) or off',
    description:
      'A `maintenance`/`maintenance_on` or `maintenance_off` task. While on, every request gets 503 with `Retry-After` and the ' +
      "project's maintenance page (or a plain default), `{{note}}` replaced by the note. GET /environments/{id} shows `maintenance`. " +
      'The task waits `pending` while an exclusive change (deploy, restore, storage_move...) runs on the environment.',
    tags: ['maintenance'],
    auth: 'session',
    permission: 'deploy',
    scope: scopes.environment,
    startsTask: true,
    params: idParams,
    body,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error('Role may not'),
      404: error('No such environment'),
      422: error('Invalid body'),
    },
    async handler(ctx) {
      const env = ctx.scope.row;
      const on = ctx.input.body.maintenance;
      const task = await startTask(ctx.deps, ctx.actor, {
        type: on ? 'maintenance_on' : 'maintenance_off',
        teamId: env.team_id,
        projectId: env.project_id,
        environmentId: env.id,
        params: on && ctx.input.body.note ? { note: ctx.input.body.note } : {},
        summary: `maintenance ${on ? 'on' : 'off'} for ${env.name}`,
      });
      return task;
    },
  }),
] as RouteDef[];
