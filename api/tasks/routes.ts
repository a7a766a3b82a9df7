import { z } from 'zod';
import { scopes } from '../lib/scopes';
import { defineRoute, type RouteDef } from '../lib/define-route';
import { sendWithEtag } from '../lib/etag';
import * as s from './schemas';
import { cancelTask, getTask, listTasks, readTaskLog } from './service';
import { errorResponse as error } from '../lib/responses';
import { presentTaskDetail, presentTaskRow } from './presenter';

const tags = ['tasks'];

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/tasks',
    operationId: 'listTasks',
    summary: 'Tasks of the teams the caller reaches, newest first, a page at a time',
    description:
      'Filters: team, project, environment, kind, type. `limit` 1-100 (default 20); pass `next_before` back as ' +
      '`before` for the next page (null on the last). Answers with a strong ETag; `If-None-Match` with it answers 304 with no ' +
      'body while the page is unchanged (a token request still counts toward its rate limit). A token sees its one team.',
    tags,
    auth: 'token',
    permission: 'task:read',
    query: s.listTasksQuery,
    responses: {
      200: { description: 'A page of tasks', schema: s.taskPageSchema },
      304: { description: 'Unchanged since the ETag sent in If-None-Match; no body' },
      422: error('Invalid filters, limit or cursor (`fields` names each)'),
    },
    async handler(ctx) {
      const { etag, rows, next_before } = await listTasks(ctx.deps, ctx.actor, ctx.input.query);
      sendWithEtag(ctx, etag, { data: rows.map(presentTaskRow), next_before });
    },
  }),
  defineRoute({
    method: 'get',
    path: '/tasks/{id}',
    operationId: 'getTask',
    summary: 'One task, with the account that asked for it; include=log adds the end of its log',
    description:
      '`include=log` adds `log_tail` (the last ~4 KB of the log, from a line start) and `log_seq` (pass it as `after` to ' +
      'GET /tasks/{id}/log to read on from there).',
    tags,
    auth: 'token',
    permission: 'task:read',
    scope: scopes.task,
    params: s.idParams,
    query: s.getTaskQuery,
    responses: {
      200: { description: 'The task', schema: s.taskWithLogSchema },
      404: error("No such task (or another team's)"),
      422: error('Invalid include'),
    },
    async handler(ctx) {
      return getTask(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.query.include);
    },
    present: presentTaskDetail,
  }),
  defineRoute({
    method: 'get',
    path: '/tasks/{id}/log',
    operationId: 'getTaskLog',
    summary: 'What the task printed so far, in order, as text/plain',
    description:
      'With `after=<seq>` only what was printed after that chunk. `X-Log-Seq` carries the seq of the last chunk read (pass ' +
      'it as `after` next time) and `X-Task-Status` the task status read before the log, so a client tails a task by polling ' +
      'until the status is succeeded, failed or cancelled.',
    tags,
    auth: 'token',
    permission: 'task:read',
    scope: scopes.task,
    params: s.idParams,
    query: s.taskLogQuery,
    responses: {
      200: { description: 'The log text', schema: z.string(), contentType: 'text/plain; charset=utf-8' },
      404: error("No such task (or another team's)"),
      422: error('Invalid `after`'),
    },
    async handler(ctx) {
      const log = await readTaskLog(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.query.after);
      ctx.set('X-Log-Seq', String(log.seq));
      ctx.set('X-Task-Status', log.status);
      ctx.set('Cache-Control', 'no-store');
      ctx.type = 'text/plain; charset=utf-8';
      ctx.status = 200;
      ctx.body = log.text;
    },
  }),
  defineRoute({
    method: 'post',
    path: '/tasks/{id}/cancel',
    operationId: 'cancelTask',
    summary: 'Cancel a task nothing has started yet (status pending)',
    description:
      'Answers the task, now cancelled. A task that is running or has ended answers 409 `task_not_cancellable` with its `status`.',
    tags,
    auth: 'session',
    permission: 'task:cancel',
    scope: scopes.task,
    params: s.idParams,
    responses: {
      200: { description: 'The cancelled task', schema: s.taskSchema },
      403: error("forbidden: the caller's role may not cancel tasks"),
      404: error("No such task (or another team's)"),
      409: error('task_not_cancellable (with `status`): something has started the task, or it has ended'),
    },
    async handler(ctx) {
      return cancelTask(ctx.deps, ctx.actor, ctx.input.params.id);
    },
    present: presentTaskRow,
  }),
] as RouteDef[];
