import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { scopes } from '../lib/scopes';
import { taskSchema } from '../tasks/presenter';
import * as s from './schemas';
import * as tasks from './task-service';

const tags = ['backups'];
const PROTECTED =
  'Over a protected environment the body needs `password` and a recent sign-in, else 403 reauthentication_required.';

export const routes: RouteDef[] = [
  defineRoute({
    method: 'post',
    path: '/environments/{id}/backups',
    operationId: 'createBackup',
    summary: 'Takes a snapshot of the environment (database and files): 202 with the backups/backup task',
    description:
      "Without destination_id, the backup window's destination; none set: 422 on destination_id. A `local` " +
      "destination is on the control plane's machine: for an environment running on another machine, 409 " +
      '`local_destination_elsewhere` naming the destination.',
    tags,
    auth: 'session',
    permission: 'data:write',
    scope: scopes.environment,
    startsTask: true,
    params: s.idParams,
    body: s.createBackupBody,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error('Role may not'),
      404: error('No such environment'),
      409: error('local_destination_elsewhere: a local destination, and the environment runs on another machine'),
      422: error('Invalid fields'),
    },
    async handler(ctx) {
      return tasks.requestBackup(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/backups/{snapshot}/restore',
    operationId: 'restoreBackup',
    summary:
      "Puts the snapshot's database and files back and restarts the web processes: 202 with the backups/restore task",
    description:
      `Never by a personal access token. ${PROTECTED} A wrong password counts as a failed credential of the address. ` +
      "A snapshot in a `local` destination (on the control plane's machine) into an environment running on another " +
      'machine: 409 `local_destination_elsewhere` naming the destination.',
    tags,
    auth: 'session',
    permission: 'data:restore',
    scope: scopes.environment,
    startsTask: true,
    params: s.snapshotParams,
    body: s.restoreBody,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error('Role may not, token_not_allowed or reauthentication_required'),
      404: error('No such snapshot'),
      409: error('task_in_progress, deploy_in_progress, snapshot_not_available or local_destination_elsewhere'),
      422: error('Invalid fields'),
      429: error('Too many failed credentials from this address (a wrong password counts)'),
    },
    async handler(ctx) {
      return tasks.requestRestore(
        ctx.deps,
        ctx.actor,
        ctx.scope.row,
        ctx.input.params.snapshot,
        ctx.input.body,
        ctx.ip,
      );
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/backups/{snapshot}/verify',
    operationId: 'verifyBackup',
    summary:
      'A restore drill: restores the snapshot into scratch and compares it with what its backup recorded: 202 with the backups/verify task',
    description:
      "The snapshot is read back (its size and SHA-256 checked), decrypted, its database restored into a scratch database and its files into a scratch directory, then every table's row count and the number of files are compared with what the backup recorded (a snapshot taken before drills: its restore alone). Everything made for it is removed. The outcome is the snapshot's `verified_at` and `verify_error`; a failure also sends `backup.verify_failed` and writes the activity event `backups`/`verify_failed`. The environment's data is never touched.",
    tags,
    auth: 'session',
    permission: 'data:write',
    scope: scopes.environment,
    startsTask: true,
    params: s.snapshotParams,
    body: s.emptyBody,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error('Role may not'),
      404: error('No such snapshot'),
      409: error('snapshot_not_available'),
      422: error('Invalid fields'),
    },
    async handler(ctx) {
      return tasks.requestVerify(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.params.snapshot);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/environments/{id}/sync',
    operationId: 'getSyncSources',
    description:
      "The first call of a sync: the project's other environments whose database and files can be copied into this one with `POST /environments/{id}/sync`.",
    summary: "The project's other environments whose data can be copied in",
    tags,
    auth: 'session',
    permission: 'data:read',
    scope: scopes.environment,
    params: s.idParams,
    responses: { 200: { description: 'Sources', schema: s.syncSourcesSchema }, 404: error('No such environment') },
    async handler(ctx) {
      ctx.body = await tasks.syncSources(ctx.deps, ctx.scope.row);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/sync',
    operationId: 'syncEnvironment',
    summary: "Replaces the environment's database and files by another environment's: 202 with the backups/sync task",
    description: `Needs confirm: true (else 422 on confirm, nothing changes). A source with a database needs one in this environment too (else 422 on from_environment_id). From an environment on another host, its files come through the release store. ${PROTECTED}`,
    tags,
    auth: 'session',
    permission: 'data:restore',
    scope: scopes.environment,
    startsTask: true,
    params: s.idParams,
    body: s.syncBody,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error('Role may not or reauthentication_required'),
      404: error('No such environment'),
      409: error('task_in_progress or deploy_in_progress'),
      422: error('Invalid fields'),
      429: error('Too many failed credentials from this address (a wrong password counts)'),
    },
    async handler(ctx) {
      return tasks.requestSync(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body, ctx.ip);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/reset-database',
    operationId: 'resetDatabase',
    summary: "Leaves the environment's database empty: 202 with the backups/reset_database task",
    description: `Needs the environment's name in confirm (else 422 on confirm, nothing changes). ${PROTECTED}`,
    tags,
    auth: 'session',
    permission: 'data:restore',
    scope: scopes.environment,
    startsTask: true,
    params: s.idParams,
    body: s.resetDatabaseBody,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error('Role may not or reauthentication_required'),
      404: error('No such environment'),
      409: error('no_database_service, task_in_progress or deploy_in_progress'),
      422: error('Invalid fields'),
      429: error('Too many failed credentials from this address (a wrong password counts)'),
    },
    async handler(ctx) {
      return tasks.requestResetDatabase(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body, ctx.ip);
    },
  }),
] as RouteDef[];
