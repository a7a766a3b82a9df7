import { z } from 'zod';
import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { scopes } from '../lib/scopes';
import { taskSchema } from '../tasks/presenter';
import { idParams } from './schemas';
import * as pitr from './pitr-service';

const tags = ['backups'];

const recoveryWindowSchema = z.strictObject({
  earliest: z.string().describe('ISO seconds: the stop time of the first archive backup holding the database'),
  latest: z.string().describe('ISO seconds: when the newest WAL segment reached the archive'),
});

const pointInTimeRestoreBody = z.strictObject({
  point_in_time: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date and time' }),
  confirm: z.boolean().optional(),
  password: z.string().max(200).optional(),
});

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/environments/{id}/recovery-window',
    operationId: 'getRecoveryWindow',
    summary: "The seconds the environment's database can be restored to, read from the WAL archive",
    description:
      "`earliest`: the stop time of the first backup of the archive holding the environment's current database (an incremental backup follows every service creation and every swap); `latest`: when the newest WAL reached the archive. No database service: 409 `no_database_service`; a services server without point-in-time recovery, or no backup of this database yet: 409 `pitr_unavailable` with `reason`.",
    tags,
    auth: 'session',
    permission: 'data:read',
    scope: scopes.environment,
    params: idParams,
    responses: {
      200: { description: 'The window', schema: recoveryWindowSchema },
      404: error('No such environment'),
      409: error('no_database_service or pitr_unavailable'),
    },
    async handler(ctx) {
      ctx.body = await pitr.getRecoveryWindow(ctx.deps, ctx.scope.row);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/restore',
    operationId: 'restorePointInTime',
    summary: 'Puts the database back as it was at a second of the recovery window: 202 with the backups/restore task',
    description:
      'Needs `confirm: true` (else 422 on confirm); a second outside the recovery window: 422 on `point_in_time`. The replaced database is kept 24 hours; the volume comes from the newest snapshot before that second (none: left as it is). Never by a personal access token. Over a protected environment the body needs `password` and a recent sign-in, else 403 reauthentication_required.',
    tags,
    auth: 'session',
    permission: 'data:restore',
    scope: scopes.environment,
    startsTask: true,
    params: idParams,
    body: pointInTimeRestoreBody,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error('Role may not, token_not_allowed or reauthentication_required'),
      404: error('No such environment'),
      409: error('no_database_service, pitr_unavailable, task_in_progress or deploy_in_progress'),
      422: error('Invalid fields'),
      429: error('Too many failed credentials from this address (a wrong password counts)'),
    },
    async handler(ctx) {
      return pitr.requestPointInTimeRestore(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body, ctx.ip);
    },
  }),
] as RouteDef[];
