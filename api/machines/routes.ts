import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorBodySchema, errorResponse as error } from '../lib/responses';
import { defineScope, scopes } from '../lib/scopes';
import { taskSchema } from '../tasks/presenter';
import { Server } from '../../db/models/server';
import * as s from './schemas';
import * as machines from './service';
import { getScale, requestScale } from './scale-service';
import { presentServer } from './presenter';

/** Tasks that restart web processes wait for the environment's exclusive changes (db/queries/task-gate.ts). */
const WAITS =
  ' Not refused while another task runs: it waits `pending` while an exclusive change (deploy, restore, storage_move...) ' +
  'runs on the environment, and never runs beside one.';
const tags = ['machines'];
const serverScope = defineScope<Server>('server', async (knex, id) => Server.query(knex).findById(id));
const inProgress = errorBodySchema;

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/servers',
    operationId: 'listServers',
    summary: 'The servers of the teams the caller reaches, with their plans and monthly prices',
    description: 'Every environment has a `web` server from its creation. `team` narrows the list to one team.',
    tags,
    auth: 'session',
    permission: 'machines:read',
    query: s.listServersQuery,
    responses: { 200: { description: 'Servers', schema: s.serverListSchema }, 422: error('Invalid filter') },
    async handler(ctx) {
      return machines.listServers(ctx.deps, ctx.actor, ctx.input.query);
    },
    present: presentServer,
  }),
  defineRoute({
    method: 'get',
    path: '/servers/{id}/resize',
    operationId: 'getServerResize',
    summary: "The server's plan and the plans it can be resized to, each with its monthly price and what it changes",
    description:
      "`monthly_price_delta` is the choice's monthly price minus the current plan's (price list: PRICE_LIST).",
    tags,
    auth: 'session',
    permission: 'machines:read',
    scope: serverScope,
    params: s.idParams,
    responses: {
      200: { description: 'Plan and choices', schema: s.resizeChoicesSchema },
      404: error('No such server'),
    },
    async handler(ctx) {
      ctx.body = machines.resizeChoices(ctx.deps, ctx.scope.row);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/servers/{id}/resize',
    operationId: 'resizeServer',
    summary: 'Moves the server to another plan: its instances restart one at a time on the new limits (a task)',
    description:
      'Answers 202 with the task (`machines`/`resize`). Each instance is replaced by one on the new plan that must answer ' +
      'its health check before the old one stops; if it does not, the old one keeps serving and the plan stays. ' +
      'Unknown plan or the current one: 422 on `plan`. One change at a time per environment: 409 `deploy_in_progress` ' +
      'or `task_in_progress` with `task_id`. A larger plan that no longer fits on the machine it runs on: 409 ' +
      '`no_capacity`, naming the largest plan that fits now.',
    tags,
    auth: 'session',
    permission: 'machines:write',
    scope: serverScope,
    startsTask: true,
    params: s.idParams,
    body: s.resizeBody,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error("forbidden: the caller's role may not change machines"),
      404: error('No such server'),
      409: error('deploy_in_progress, task_in_progress (with task_id) or no_capacity', inProgress),
      422: error('Unknown plan, or the current one'),
    },
    async handler(ctx) {
      const task = await machines.requestResize(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body.plan);
      return task;
    },
  }),
  defineRoute({
    method: 'post',
    path: '/servers/{id}/reboot',
    operationId: 'rebootServer',
    summary: "Restarts the server's instances one at a time, health-checked (a task)",
    description:
      'Answers 202 with the task (`machines`/`reboot`). Each web instance in turn is replaced by a new one that answers ' +
      'its health check before the old one leaves the edge, so the environment keeps answering.' +
      WAITS,
    tags,
    auth: 'session',
    permission: 'machines:write',
    scope: serverScope,
    startsTask: true,
    params: s.idParams,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error("forbidden: the caller's role may not change machines"),
      404: error('No such server'),
    },
    async handler(ctx) {
      const task = await machines.requestReboot(ctx.deps, ctx.actor, ctx.scope.row);
      return task;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/environments/{id}/scale',
    operationId: 'getEnvironmentScale',
    summary: 'How many web instances the environment runs behind the edge, the most it may, and what each count costs',
    description:
      '`max` is SCALE_MAX. Each instance runs on the web server plan and costs its monthly price; `monthly_price_delta` ' +
      "is a choice's monthly price minus the current one.",
    tags,
    auth: 'session',
    permission: 'machines:read',
    scope: scopes.environment,
    params: s.idParams,
    responses: {
      200: { description: 'Instances and choices', schema: s.scaleSchema },
      404: error('No such environment'),
    },
    async handler(ctx) {
      ctx.body = await getScale(ctx.deps, ctx.input.params.id);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/scale',
    operationId: 'scaleEnvironment',
    summary:
      'Runs that many web instances of the live release behind the edge, balanced and sticky when asked (a task)',
    description:
      'Answers 202 with the task (`machines`/`scale`). New instances must answer their health check before the edge ' +
      "sends them requests; extra instances leave the edge first, then stop. With the edge's `stickiness`, the " +
      '`vc_instance` cookie keeps a client on one instance while it lives. 0, more than `max` or the current count: ' +
      '422 on `instances`. One change at a time per environment: 409 `deploy_in_progress` or `task_in_progress` with ' +
      '`task_id`. More instances than the machine it runs on has room for: 409 `no_capacity`.',
    tags,
    auth: 'session',
    permission: 'machines:write',
    scope: scopes.environment,
    startsTask: true,
    params: s.idParams,
    body: s.scaleBody,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error("forbidden: the caller's role may not change machines"),
      404: error('No such environment'),
      409: error('deploy_in_progress, task_in_progress (with task_id) or no_capacity', inProgress),
      422: error('instances out of 1..max, or the current count'),
    },
    async handler(ctx) {
      const task = await requestScale(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.body.instances);
      return task;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/environments/{id}/resources',
    operationId: 'getEnvironmentResources',
    summary: "The environment's CPU, memory and disk use over a window, at most 500 points",
    description:
      '`window` is one of 1h, 24h, 7d, 30d, 90d; each point averages the samples of its `step` seconds (samples are taken every ' +
      'RESOURCE_SAMPLE_SECONDS and kept 90 days). cpu: percent of one core; memory and disk: bytes. Oldest first.',
    tags,
    auth: 'session',
    permission: 'machines:read',
    scope: scopes.environment,
    params: s.idParams,
    query: s.resourcesQuery,
    responses: {
      200: { description: 'Series', schema: s.resourcesSchema },
      404: error('No such environment'),
      422: error('Invalid window'),
    },
    async handler(ctx) {
      ctx.body = await machines.environmentResources(ctx.deps, ctx.input.params.id, ctx.input.query.window);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/environments/{id}/build-machines',
    operationId: 'getEnvironmentBuildMachine',
    description:
      "The build provider and plan this environment's builds run on, and the providers there are to choose from.",
    summary: "The provider and plan the environment's builds run on, and the providers there are",
    tags,
    auth: 'session',
    permission: 'machines:read',
    scope: scopes.environment,
    params: s.idParams,
    responses: {
      200: { description: 'The build machine', schema: s.buildMachineSchema },
      404: error('No such environment'),
    },
    async handler(ctx) {
      ctx.body = await machines.getBuildMachine(ctx.deps, ctx.input.params.id);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/build-machines/options',
    operationId: 'listBuildMachineOptions',
    description:
      "Takes `{provider}` and answers that provider's plans with their monthly prices, for choosing a build machine; changes nothing. An unknown provider is 422.",
    summary: "One build provider's plans (sizes), with their prices; changes nothing",
    tags,
    auth: 'session',
    permission: 'machines:read',
    scope: scopes.environment,
    params: s.idParams,
    body: s.buildOptionsBody,
    responses: {
      200: { description: 'Plans', schema: s.buildOptionsSchema },
      404: error('No such environment'),
      422: error('Unknown provider'),
    },
    async handler(ctx) {
      ctx.body = await machines.buildOptions(ctx.deps, ctx.input.params.id, ctx.input.body.provider);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/build-machines',
    operationId: 'setEnvironmentBuildMachine',
    summary: "Chooses the provider and plan the environment's builds run on (their limits apply to build steps)",
    description: 'Unknown provider or plan: 422 naming it. Takes effect for the next build.',
    tags,
    auth: 'session',
    permission: 'machines:write',
    scope: scopes.environment,
    params: s.idParams,
    body: s.setBuildMachineBody,
    responses: {
      200: { description: 'The build machine', schema: s.buildMachineSchema },
      403: error("forbidden: the caller's role may not change machines"),
      404: error('No such environment'),
      422: error('Unknown provider or plan'),
    },
    async handler(ctx) {
      const env = ctx.scope.row;
      ctx.body = await machines.changeBuildMachine(ctx.deps, ctx.actor, env, ctx.input.body);
    },
  }),
] as RouteDef[];
