import { z } from 'zod';
import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import * as s from './schemas';
import { autoDeployProject } from '../../core/projects/auto-deploy';
import { checkHookSignature, SIGNATURE_HEADER } from './repository-service';
import { cancelChoices, cancelProject } from './cancel-service';
import { scopes } from '../lib/scopes';

const hookParams = z.object({ project_id: z.uuid() });

export const routes: RouteDef[] = [
  defineRoute({
    method: 'post',
    path: '/hooks/git/{project_id}',
    operationId: 'receiveGitHook',
    summary: "A push from the project's git host: deploys at once every environment with auto_deploy whose ref moved",
    description:
      'No session or token: signed as GitHub signs, `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body ' +
      "keyed with the project's webhook secret>` (shown when the repository is connected). 401 without the header, " +
      '403 when it does not match (nothing is started either way). The payload is not read: each environment with ' +
      "auto_deploy on is compared with the repository's head of its git_ref. `busy`: another change runs on the " +
      'environment; the auto-deploy poller deploys the commit after it.',
    tags: ['projects'],
    auth: 'signature',
    params: hookParams,
    body: s.hookBody,
    signature: (deps, ctx, params, raw) => checkHookSignature(deps, ctx.get(SIGNATURE_HEADER), params.project_id, raw),
    responses: {
      202: { description: 'What happened to each environment with auto_deploy', schema: s.hookAnswerSchema },
      401: error('No signature'),
      403: error('Wrong signature'),
      422: error('The body is not a JSON object'),
    },
    async handler(ctx) {
      ctx.status = 202;
      ctx.body = { data: await autoDeployProject(ctx.deps, ctx.input.params.project_id) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/projects/{id}/cancel',
    operationId: 'getProjectCancellation',
    description:
      'The first of the two calls of cancelling a project: the running subscriptions that end and the environments that stop, and when their data is deleted (30 days later). The POST needs `confirm: true`.',
    summary: 'What cancelling the project ends: its running subscriptions and its environments; when data goes',
    tags: ['projects'],
    auth: 'session',
    permission: 'project:delete',
    scope: scopes.project,
    params: s.idParams,
    responses: {
      200: { description: 'What ends', schema: s.cancelSchema },
      403: error('Role may not'),
      404: error('No such project'),
    },
    async handler(ctx) {
      ctx.body = await cancelChoices(ctx.deps, ctx.input.params.id);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/projects/{id}/cancel',
    operationId: 'cancelProject',
    summary: 'Cancels the project: ends its subscriptions and stops its environments (data kept 30 days)',
    description:
      'Needs `{"confirm": true}` (422 on confirm otherwise, nothing changes). Subscriptions end at once; the ' +
      'environments\' web processes stop (the edge answers 503 "stopped"), no deploy or auto-deploy starts on ' +
      'them; their data is deleted by the daily prune 30 days later, after which DELETE /projects/{id} succeeds. ' +
      '409 when cancelled already, or task_in_progress (with task_id) while a task is pending or running on one.',
    tags: ['projects'],
    auth: 'session',
    permission: 'project:delete',
    scope: scopes.project,
    params: s.idParams,
    body: s.cancelBody,
    responses: {
      200: { description: 'Cancelled: what ended', schema: s.cancelSchema },
      403: error('Role may not'),
      404: error('No such project'),
      409: error('Cancelled already, or task_in_progress'),
      422: error('confirm is not true'),
    },
    async handler(ctx) {
      ctx.body = await cancelProject(ctx.deps, ctx.actor, ctx.input.params.id);
    },
  }),
] as RouteDef[];
