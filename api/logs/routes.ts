import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import { scopes } from '../lib/scopes';
import * as s from './schemas';
import { getEnvironmentLogs, getProjectLogs, updateProjectLogs } from './service';
import { idParams } from '../lib/params';
import { presentProjectLogs } from './presenter';

const tags = ['logs'];

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/projects/{id}/logs',
    operationId: 'getProjectLogs',
    description:
      "The project's log destination (HTTP collector or syslog) shown without credentials, whether the last send arrived (`can_send`, `last_sent_at`, `last_error`) and how many days machines keep their own copy.",
    summary: "The project's log forwarding: destination (credentials never shown), whether it can send, days kept",
    tags,
    auth: 'session',
    permission: 'config:read',
    scope: scopes.project,
    params: idParams,
    responses: { 200: { description: 'Log forwarding', schema: s.projectLogsSchema }, 404: error('No such project') },
    async handler(ctx) {
      return getProjectLogs(ctx.deps, ctx.input.params.id);
    },
    present: presentProjectLogs,
  }),
  defineRoute({
    method: 'post',
    path: '/projects/{id}/logs',
    operationId: 'updateProjectLogs',
    summary: 'Sets the log destination (http or syslog; null: none) and/or the days machines keep logs',
    description:
      'Makes a test send to the destination and saves: `can_send` says whether it arrived (2xx for http; for syslog tcp ' +
      "a connect and write; udp sent without error), `last_error` why not. The edge request log and the web processes' " +
      'error output then go there in batches: http POSTs of newline-delimited JSON (application/x-ndjson), syslog RFC 5424 ' +
      '(octet-counted over tcp). A destination on an internal address is refused (422) unless OUTBOUND_ALLOWED_HOSTS lists it.',
    tags,
    auth: 'session',
    permission: 'config:write',
    scope: scopes.project,
    params: idParams,
    body: s.projectLogsBody,
    responses: {
      200: { description: 'Log forwarding', schema: s.projectLogsSchema },
      403: error('Role may not'),
      404: error('No such project'),
      422: error('Invalid fields, each named (destination.url, destination.port, keep_days_on_machine)'),
    },
    async handler(ctx) {
      return updateProjectLogs(ctx.deps, ctx.actor, ctx.scope.row, ctx.input.body);
    },
    present: presentProjectLogs,
  }),
  defineRoute({
    method: 'get',
    path: '/environments/{id}/logs',
    operationId: 'getEnvironmentLogs',
    description:
      "The console keeps no logs to tail: this says where the environment's request and error lines go (the project's destination by kind and name), whether they can be sent, and each machine's local copy.",
    summary: "Where the environment's logs go and how long each of its machines keeps its own copy",
    tags,
    auth: 'session',
    permission: 'config:read',
    scope: scopes.environment,
    params: idParams,
    responses: {
      200: { description: 'Log forwarding', schema: s.environmentLogsSchema },
      404: error('No such environment'),
    },
    async handler(ctx) {
      ctx.body = await getEnvironmentLogs(ctx.deps, ctx.scope.row);
    },
  }),
] as RouteDef[];
