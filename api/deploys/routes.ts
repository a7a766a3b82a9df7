import type { z } from 'zod';
import { defineRoute, type RouteDef } from '../lib/define-route';
import * as s from './schemas';
import { requestTask } from './service';

const tags = ['deploys'];
const error = (description: string, schema: z.ZodType = s.errorSchema) => ({ description, schema });
const refusals = {
  403: error('forbidden: the caller\'s role may not deploy'),
  404: error('No such environment'),
  422: error('Invalid body (`fields` names each fault)'),
};

export const routes: RouteDef[] = [
  defineRoute({
    method: 'post',
    path: '/environments/{id}/deploy',
    operationId: 'deployEnvironment',
    summary: 'Deploy the head of the environment\'s git ref: build (unless already built), deploy steps (unless skip_steps), go live',
    description:
      'Answers 202 with the task; poll GET /tasks/{id} for the outcome and read GET /tasks/{id}/log. Refused with 409 ' +
      '`deploy_in_progress` (with `task_id` of the running task) while a deploy, redeploy or rollback runs on the environment; ' +
      'never queued. 409 `no_repository` when the project has no repository.',
    tags,
    auth: 'token',
    permission: 'deploy',
    params: s.environmentParams,
    body: s.deployBody,
    responses: {
      202: { description: 'The task', schema: s.taskSchema },
      ...refusals,
      409: error('deploy_in_progress (with task_id) or no_repository', s.errorSchema.or(s.deployInProgressSchema)),
    },
    async handler(ctx) {
      ctx.status = 202;
      ctx.body = await requestTask(ctx.deps, ctx.actor, {
        environmentId: ctx.input.params.id,
        type: 'deploy',
        skipSteps: ctx.input.body.skip_steps,
      });
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/redeploy',
    operationId: 'redeployEnvironment',
    summary: 'Deploy the live release again, deploy steps included unless skip_steps',
    tags,
    auth: 'token',
    permission: 'deploy',
    params: s.environmentParams,
    body: s.deployBody,
    responses: {
      202: { description: 'The task', schema: s.taskSchema },
      ...refusals,
      409: error('deploy_in_progress (with task_id), no_repository or nothing_to_redeploy', s.errorSchema.or(s.deployInProgressSchema)),
    },
    async handler(ctx) {
      ctx.status = 202;
      ctx.body = await requestTask(ctx.deps, ctx.actor, {
        environmentId: ctx.input.params.id,
        type: 'redeploy',
        skipSteps: ctx.input.body.skip_steps,
      });
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/rollback',
    operationId: 'rollbackEnvironment',
    summary: 'Deploy the release that ran before the last successful deployment; code only (no deploy steps)',
    tags,
    auth: 'token',
    permission: 'deploy',
    params: s.environmentParams,
    body: s.emptyBody,
    responses: {
      202: { description: 'The task', schema: s.taskSchema },
      ...refusals,
      409: error('deploy_in_progress (with task_id), no_repository or nothing_to_roll_back', s.errorSchema.or(s.deployInProgressSchema)),
    },
    async handler(ctx) {
      ctx.status = 202;
      ctx.body = await requestTask(ctx.deps, ctx.actor, { environmentId: ctx.input.params.id, type: 'rollback' });
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/build',
    operationId: 'buildEnvironment',
    summary: 'Build a release of the environment\'s git ref head without putting it live',
    description: 'The task waits `pending` while every build slot (BUILD_CONCURRENCY) is taken.',
    tags,
    auth: 'token',
    permission: 'build',
    params: s.environmentParams,
    body: s.emptyBody,
    responses: {
      202: { description: 'The task', schema: s.taskSchema },
      ...refusals,
      409: error('no_repository'),
    },
    async handler(ctx) {
      ctx.status = 202;
      ctx.body = await requestTask(ctx.deps, ctx.actor, { environmentId: ctx.input.params.id, type: 'build' });
    },
  }),
] as RouteDef[];
