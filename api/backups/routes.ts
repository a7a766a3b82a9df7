import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { idParams as projectParams } from '../projects/schemas';
import { scopes } from '../lib/scopes';
import * as s from './schemas';
import * as destinations from './destinations-service';
import * as backups from './service';
import { presentBackup, presentDestination, presentWindow } from './presenter';

const tags = ['backups'];
/** The environment the route's scope found (in the caller's team, the route's permission checked). */
const RECENT_SIGN_IN_MINUTES = 60;

const destinationRoutes = [
  defineRoute({
    method: 'get',
    path: '/teams/{id}/backup-destinations/new',
    operationId: 'getNewBackupDestinationChoices',
    description:
      'The kinds of backup destination (`local` under `BACKUP_LOCAL_ROOTS`, `s3`) and the fields each asks for; secret fields are write-only.',
    summary: 'What adding a backup destination asks for: the kinds and their fields (secret ones are never shown back)',
    tags,
    auth: 'session',
    permission: 'data:write',
    scope: scopes.team,
    params: s.idParams,
    responses: {
      200: { description: 'Kinds and fields', schema: s.destinationKindsSchema },
      404: error('No such team'),
    },
    handler(ctx) {
      ctx.body = destinations.destinationKinds(ctx.deps);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/teams/{id}/backup-destinations',
    operationId: 'listBackupDestinations',
    description:
      "The team's backup destinations with, for each, how many snapshots it holds and their bytes; secret fields are only named in `secret_fields`.",
    summary: "The team's backup destinations with their snapshot counts and used bytes",
    tags,
    auth: 'session',
    permission: 'data:read',
    scope: scopes.team,
    params: s.idParams,
    responses: { 200: { description: 'Destinations', schema: s.destinationListSchema }, 404: error('No such team') },
    async handler(ctx) {
      return destinations.listDestinations(ctx.deps, ctx.input.params.id);
    },
    present: presentDestination,
  }),
  defineRoute({
    method: 'post',
    path: '/teams/{id}/backup-destinations',
    operationId: 'createBackupDestination',
    summary:
      'Adds a backup destination (local directory or S3-compatible store) after a probe object was written, read and deleted there',
    description:
      'A failed probe answers 422 naming the field most likely at fault. `local.path` must be an existing directory outside DATA_DIR.',
    tags,
    auth: 'session',
    permission: 'data:write',
    scope: scopes.team,
    params: s.idParams,
    body: s.createDestinationBody,
    responses: {
      201: { description: 'The destination (secret fields never shown)', schema: s.destinationSchema },
      403: error('Role may not'),
      404: error('No such team'),
      409: error('Name taken'),
      422: error('Invalid fields, or the probe failed'),
    },
    async handler(ctx) {
      ctx.status = 201;
      return destinations.createDestination(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.body, ctx.ip);
    },
    present: presentDestination,
  }),
  defineRoute({
    method: 'get',
    path: '/backup-destinations/{id}',
    operationId: 'getBackupDestination',
    description: 'One destination with its snapshot count and used bytes; its secret fields are named, never shown.',
    summary: 'One backup destination with its snapshot count and used bytes',
    tags,
    auth: 'session',
    permission: 'data:read',
    scope: scopes.backupDestination,
    params: s.idParams,
    responses: {
      200: { description: 'The destination', schema: s.destinationSchema },
      404: error('No such destination'),
    },
    async handler(ctx) {
      return destinations.getDestination(ctx.deps, ctx.input.params.id);
    },
    present: presentDestination,
  }),
  defineRoute({
    method: 'post',
    path: '/backup-destinations/{id}',
    operationId: 'updateBackupDestination',
    description:
      'Changes the fields given and probes the destination again (an object written, read back and deleted); if the probe fails, 422 names the field and nothing is saved.',
    summary: 'Changes the fields given (probing the destination again); fields of another kind are refused',
    tags,
    auth: 'session',
    permission: 'data:write',
    scope: scopes.backupDestination,
    params: s.idParams,
    body: s.updateDestinationBody,
    responses: {
      200: { description: 'The destination', schema: s.destinationSchema },
      403: error('Role may not'),
      404: error('No such destination'),
      409: error('Name taken'),
      422: error('Invalid fields, or the probe failed'),
    },
    async handler(ctx) {
      return destinations.updateDestination(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.body, ctx.ip);
    },
    present: presentDestination,
  }),
];

const windowRoutes = [
  defineRoute({
    method: 'get',
    path: '/projects/{id}/backup-window',
    operationId: 'getBackupWindow',
    description:
      "The hour (UTC) of the project's daily backups, how many days snapshots are kept and where they go. With no destination (the default) no scheduled backup runs.",
    summary: "The project's daily backup window (default: 03:00 UTC, 7 days, no destination, so no scheduled backups)",
    tags,
    auth: 'session',
    permission: 'data:read',
    scope: scopes.project,
    params: projectParams,
    responses: { 200: { description: 'The window', schema: s.backupWindowSchema }, 404: error('No such project') },
    async handler(ctx) {
      return backups.getBackupWindow(ctx.deps, ctx.actor, ctx.input.params.id);
    },
    present: presentWindow,
  }),
  defineRoute({
    method: 'post',
    path: '/projects/{id}/backup-window',
    operationId: 'setBackupWindow',
    description:
      'Sets the hour, retention and destination: the Temporal schedule `backups-<project_id>` then backs up every environment with data daily and deletes snapshots older than the retention.',
    summary:
      'Sets the backup window: the Temporal schedule backups-<project_id> backs every environment with data up then',
    tags,
    auth: 'session',
    permission: 'data:write',
    scope: scopes.project,
    params: projectParams,
    body: s.setBackupWindowBody,
    responses: {
      200: { description: 'The window', schema: s.backupWindowSchema },
      403: error('Role may not'),
      404: error('No such project'),
      422: error('Invalid fields'),
    },
    async handler(ctx) {
      return backups.setBackupWindow(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.body, ctx.ip);
    },
    present: presentWindow,
  }),
  defineRoute({
    method: 'delete',
    path: '/projects/{id}/backup-window',
    operationId: 'resetBackupWindow',
    description:
      'Returns the window to the default (03:00 UTC, 7 days, no destination) and deletes its schedule; existing snapshots stay.',
    summary: 'Returns the backup window to the default (its schedule is deleted)',
    tags,
    auth: 'session',
    permission: 'data:write',
    scope: scopes.project,
    params: projectParams,
    responses: {
      200: { description: 'The default window', schema: s.backupWindowSchema },
      403: error('Role may not'),
      404: error('No such project'),
    },
    async handler(ctx) {
      return backups.resetBackupWindow(ctx.deps, ctx.actor, ctx.input.params.id, ctx.ip);
    },
    present: presentWindow,
  }),
];

const snapshotRoutes = [
  defineRoute({
    method: 'get',
    path: '/environments/{id}/backups',
    operationId: 'listBackups',
    description:
      "The environment's snapshots, newest first, each with its destination, state, `size_bytes` and the `sha256` of the stored bytes.",
    summary: "The environment's snapshots, newest first",
    tags,
    auth: 'session',
    permission: 'data:read',
    scope: scopes.environment,
    params: s.idParams,
    responses: { 200: { description: 'Snapshots', schema: s.backupListSchema }, 404: error('No such environment') },
    async handler(ctx) {
      return backups.listBackups(ctx.deps, ctx.scope.row);
    },
    present: presentBackup,
  }),
  defineRoute({
    method: 'delete',
    path: '/environments/{id}/backups/{snapshot}',
    operationId: 'deleteBackup',
    description: "Deletes the snapshot from its destination. Written to the team's activity (`backups`).",
    summary: 'Deletes a snapshot from its destination',
    tags,
    auth: 'session',
    permission: 'data:write',
    scope: scopes.environment,
    params: s.snapshotParams,
    responses: {
      204: { description: 'Deleted' },
      403: error('Role may not'),
      404: error('No such snapshot'),
      409: error('snapshot_running'),
    },
    async handler(ctx) {
      await backups.deleteBackup(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.params.snapshot, ctx.ip);
      ctx.status = 204;
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/backups/{snapshot}/download',
    operationId: 'createBackupDownload',
    summary: 'A URL that serves the encrypted snapshot for 15 minutes without other credentials',
    description:
      'Decrypt it with the backup key (POST /environments/{id}/backup-key) and scripts/decrypt-backup.mjs; see docs/data.md.',
    tags,
    auth: 'session',
    permission: 'data:write',
    scope: scopes.environment,
    params: s.snapshotParams,
    body: s.emptyBody,
    responses: {
      200: { description: 'The URL', schema: s.downloadSchema },
      403: error('Role may not'),
      404: error('No such snapshot'),
      409: error('snapshot_not_available'),
    },
    async handler(ctx) {
      ctx.body = await backups.downloadUrl(ctx.deps, ctx.scope.row, ctx.input.params.snapshot);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/snapshots/{id}/file',
    operationId: 'downloadBackupFile',
    description:
      'The signed URL that `POST .../download` answers (valid 15 minutes) needs no other credentials. Streams the encrypted `.vcb` snapshot; a stored object that is not the snapshot taken (size, SHA-256) is refused with 409 `snapshot_not_available`.',
    summary: 'The encrypted snapshot, streamed from its destination (the signed URL of createBackupDownload)',
    tags,
    auth: 'none',
    params: s.idParams,
    query: s.downloadQuery,
    responses: {
      200: {
        description: 'The encrypted snapshot (format: docs/data.md, "The snapshot format")',
        contentType: 'application/octet-stream',
      },
      403: error('Signature wrong or expired'),
      404: error('No such snapshot'),
      409: error('snapshot_not_available: the stored object is not the snapshot taken (size, SHA-256, file type)'),
    },
    async handler(ctx) {
      const file = await backups.openDownload(ctx.deps, ctx.input.params.id, ctx.input.query);
      ctx.type = 'application/octet-stream';
      ctx.set('Content-Disposition', `attachment; filename="${file.filename}"`);
      if (file.size !== undefined) ctx.length = file.size;
      ctx.body = file.body;
    },
  }),
];

const keyRoutes = [
  defineRoute({
    method: 'get',
    path: '/environments/{id}/backup-key',
    operationId: 'getBackupKey',
    description:
      "The backup key's fingerprint and which snapshots it opens; the key itself only comes from `POST`, with a recent sign-in.",
    summary: "What the environment's backup key opens (the key itself is not shown here)",
    tags,
    auth: 'session',
    permission: 'data:read',
    scope: scopes.environment,
    params: s.idParams,
    responses: {
      200: { description: 'The key description', schema: s.backupKeySchema },
      404: error('No such environment'),
    },
    async handler(ctx) {
      ctx.body = await backups.describeBackupKey(ctx.deps, ctx.scope.row);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/backup-key',
    operationId: 'revealBackupKey',
    description:
      "Answers the environment's backup key, which decrypts its snapshots (see scripts/decrypt-backup.mjs). Needs a sign-in younger than allowed (else 403 `reauthentication_required`); every reveal is written to the activity log with the client address.",
    summary:
      "Reveals the environment's backup key; needs a recent sign-in; written to the activity log with the address",
    tags,
    auth: 'session',
    permission: 'backup-key:reveal',
    scope: scopes.environment,
    recentSignInMinutes: RECENT_SIGN_IN_MINUTES,
    params: s.idParams,
    body: s.emptyBody,
    responses: {
      200: { description: 'The key', schema: s.revealKeySchema },
      403: error('Role may not, or reauthentication_required'),
      404: error('No such environment'),
    },
    async handler(ctx) {
      ctx.body = await backups.revealBackupKey(ctx.deps, ctx.actor, ctx.scope.row, ctx.ip);
    },
  }),
];

export const routes: RouteDef[] = [
  ...destinationRoutes,
  ...windowRoutes,
  ...snapshotRoutes,
  ...keyRoutes,
] as RouteDef[];
