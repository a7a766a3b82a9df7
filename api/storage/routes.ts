import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorBodySchema, errorResponse as error } from '../lib/responses';
import { defineScope, scopes } from '../lib/scopes';
import { taskSchema } from '../tasks/presenter';
import { StorageDisk } from '../../db/models/storage-disk';
import * as s from './schemas';
import * as storage from './service';

const tags = ['storage'];
/** A volume is an environment's `files` disk. */
const volumeScope = defineScope<StorageDisk>('volume', async (knex, id) =>
  StorageDisk.query(knex).findOne({ id, disk: 'files' }),
);
const spent = error('storage_allowance_spent: the allowance does not hold it', errorBodySchema);
const common = { tags, auth: 'session' as const, scope: scopes.environment };

export const routes: RouteDef[] = [
  defineRoute({
    ...common,
    method: 'get',
    path: '/environments/{id}/storage/allowance',
    operationId: 'getStorageAllowance',
    description:
      "The storage allowance in GB, the part the web server's plan includes, the monthly price of the rest, and the bytes the database and files disks use now.",
    summary: "The environment's storage allowance, what its plan includes, what it costs and the bytes each disk uses",
    permission: 'machines:read',
    params: s.idParams,
    responses: { 200: { description: 'The allowance', schema: s.allowanceSchema }, 404: error('No such environment') },
    async handler(ctx) {
      ctx.body = await storage.getAllowance(ctx.deps, ctx.scope.row);
    },
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: '/environments/{id}/storage/allowance',
    operationId: 'setStorageAllowance',
    summary: 'Sets the storage allowance: more goes to the files disk, less is taken from the database disk',
    description:
      "Storage beyond what the web server's plan includes is a `storage` subscription (price list " +
      '`storage.monthly_price_per_gb`), replaced when its price changes. Less than the database disk can give up ' +
      '(it keeps what its database holds; a volume never shrinks): 409 `storage_allowance_spent`.',
    permission: 'machines:write',
    params: s.idParams,
    body: s.allowanceBody,
    responses: {
      200: { description: 'The allowance', schema: s.allowanceSchema },
      403: error("forbidden: the caller's role may not change machines"),
      404: error('No such environment'),
      409: spent,
      422: error('Not a whole number of GB between 1 and the maximum'),
    },
    async handler(ctx) {
      ctx.body = await storage.changeAllowance(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body.allowance_gb);
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: '/environments/{id}/storage/split',
    operationId: 'getStorageSplit',
    description:
      "The two disks always sum to the allowance: this gives each one's size, to be changed with `POST .../storage/split`.",
    summary: 'How the allowance is split between the database and the files disks',
    permission: 'machines:read',
    params: s.idParams,
    responses: { 200: { description: 'The split', schema: s.splitSchema }, 404: error('No such environment') },
    async handler(ctx) {
      ctx.body = await storage.getSplit(ctx.deps, ctx.scope.row);
    },
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: '/environments/{id}/storage/split',
    operationId: 'setStorageSplit',
    summary: 'Splits the allowance between the database and the files disks (the two sum to it)',
    description:
      'More than the allowance: 409 `storage_allowance_spent`. Less: 422 on `files_gb`. A volume never shrinks ' +
      '(422 on `files_gb`); a disk keeps at least what it holds (422 naming it).',
    permission: 'machines:write',
    params: s.idParams,
    body: s.splitBody,
    responses: {
      200: { description: 'The split', schema: s.splitSchema },
      403: error("forbidden: the caller's role may not change machines"),
      404: error('No such environment'),
      409: spent,
      422: error('Sizes that do not sum to the allowance, a shrinking volume, a disk smaller than it holds'),
    },
    async handler(ctx) {
      ctx.body = await storage.changeSplit(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body);
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: '/environments/{id}/storage/{disk}/disk',
    operationId: 'getStorageDisk',
    summary: 'One disk (`database` or `files`): its size, the root it lives under, what it uses, the copy a move left',
    description: 'The `files` disk is the environment volume: `volume_id`, and VC_VOLUME_PATH in its processes.',
    permission: 'machines:read',
    params: s.diskParams,
    responses: {
      200: { description: 'The disk', schema: s.diskSchema },
      404: error('No such environment'),
      422: error('Unknown disk'),
    },
    async handler(ctx) {
      ctx.body = await storage.getDisk(ctx.deps, ctx.scope.row, ctx.input.params.disk);
    },
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: '/environments/{id}/storage/{disk}/disk',
    operationId: 'setStorageDisk',
    summary: "Sets one disk's size; the other disk gets the rest of the allowance",
    description:
      'When the rest does not hold the other disk (what its database holds, or the volume, which never shrinks): 409 ' +
      '`storage_allowance_spent`. A volume never shrinks and a disk keeps what it holds: 422 on `size_gb`.',
    permission: 'machines:write',
    params: s.diskParams,
    body: s.diskBody,
    responses: {
      200: { description: 'The disk', schema: s.diskSchema },
      403: error("forbidden: the caller's role may not change machines"),
      404: error('No such environment'),
      409: spent,
      422: error('Unknown disk, or a size the disk cannot have'),
    },
    async handler(ctx) {
      const { disk } = ctx.input.params;
      ctx.body = await storage.changeDisk(ctx.deps, ctx.actor, ctx.scope.row, disk, ctx.input.body.size_gb);
    },
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: '/environments/{id}/storage/{disk}/move',
    operationId: 'moveStorageDisk',
    summary: 'Moves a disk to another root of STORAGE_ROOTS (a task): stopped, copied, verified, switched, started',
    description:
      'Answers 202 with the task (`machines`/`storage_move`). The web process is stopped while the data is copied; ' +
      "the copy is verified (files: every path, size, mode and SHA-256; database: every table's row count) before the " +
      'disk switches and the web process starts again. The old copy is kept until POST /environments/{id}/storage/discard. ' +
      "A location that is not a root of the machine the disk is on (the volume: the environment's host; the database " +
      'disk: the services server), or the current one: 422 on `location`; a database disk without a service: 422 ' +
      'on `disk`. One change at a time per environment: 409 `deploy_in_progress` or `task_in_progress` with `task_id`.',
    permission: 'machines:write',
    startsTask: true,
    params: s.diskParams,
    body: s.moveBody,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error("forbidden: the caller's role may not change machines"),
      404: error('No such environment'),
      409: error('deploy_in_progress or task_in_progress (with task_id)', errorBodySchema),
      422: error('Unknown disk or root'),
    },
    async handler(ctx) {
      const { disk } = ctx.input.params;
      return storage.requestMove(ctx.deps, ctx.actor, ctx.scope.row, disk, ctx.input.body.location);
    },
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: '/environments/{id}/storage/discard',
    operationId: 'discardOldStorage',
    summary: 'Deletes the copies moves left behind (a task); needs `confirm: true`',
    description: 'Answers 202 with the task (`machines`/`storage_discard`). Without `confirm: true`: 422 on `confirm`.',
    permission: 'machines:write',
    startsTask: true,
    params: s.idParams,
    body: s.discardBody,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error("forbidden: the caller's role may not change machines"),
      404: error('No such environment'),
      422: error('confirm is not true'),
    },
    async handler(ctx) {
      return storage.requestDiscard(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body.confirm);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/volumes/{id}/grow',
    operationId: 'getVolumeGrow',
    description:
      'A volume only grows: this lists the sizes it can grow to with the monthly price each adds, before `POST /volumes/{id}/grow`.',
    summary: "The volume's size and the sizes it can grow to, each with what it adds to the monthly bill",
    tags,
    auth: 'session',
    permission: 'machines:read',
    scope: volumeScope,
    params: s.idParams,
    responses: { 200: { description: 'Size and choices', schema: s.growSchema }, 404: error('No such volume') },
    async handler(ctx) {
      ctx.body = await storage.growChoices(ctx.deps, ctx.scope.row);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/volumes/{id}/grow',
    operationId: 'growVolume',
    summary: 'Grows the volume (a task); the allowance grows with it, the part beyond the plan paid',
    description:
      'Answers 202 with the task (`machines`/`volume_grow`). A volume never shrinks: a size not larger than it has is ' +
      '422 on `size_gb`.',
    tags,
    auth: 'session',
    permission: 'machines:write',
    scope: volumeScope,
    startsTask: true,
    params: s.idParams,
    body: s.growBody,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error("forbidden: the caller's role may not change machines"),
      404: error('No such volume'),
      422: error('Not larger than the volume, or past the maximum'),
    },
    async handler(ctx) {
      return storage.requestGrow(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body.size_gb);
    },
  }),
] as RouteDef[];
