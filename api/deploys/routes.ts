import type { z } from 'zod';
import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorBodySchema, errorResponse } from '../lib/responses';
import * as s from './schemas';
import { requestTask } from '../../core/deploys';
import { environmentWithProject, type EnvironmentWithProject } from '../../db/queries/environments';
import type { DeployType } from '../../db/vocabulary';
import { defineScope } from '../lib/scopes';

/** The environment with its project's name and repository, read once for the permission check and the task. */
const environmentScope = defineScope<EnvironmentWithProject>('environment', environmentWithProject);

/**
 * The four task-starting routes of an environment. Each answers 202 with the task; they differ in the
 * task type, the permission, the body they take and the conflicts they name.
 */
function taskRoute(def: {
  type: DeployType | 'build';
  operationId: string;
  summary: string;
  description?: string;
  body: z.ZodType<{ skip_steps?: boolean }>;
  conflicts: string;
}): RouteDef {
  const isBuild = def.type === 'build';
  return defineRoute({
    method: 'post',
    path: `/environments/{id}/${def.type}`,
    operationId: def.operationId,
    summary: def.summary,
    description:
      'Answers 202 with the task; poll GET /tasks/{id} for the outcome and read GET /tasks/{id}/log. ' +
      (def.description ?? ''),
    tags: ['deploys'],
    auth: 'token',
    permission: isBuild ? 'build' : 'deploy',
    scope: environmentScope,
    startsTask: true,
    params: s.environmentParams,
    body: def.body,
    responses: {
      202: { description: 'The task', schema: s.taskSchema },
      403: errorResponse(`forbidden: the caller's role may not ${isBuild ? 'build' : 'deploy'}`),
      404: errorResponse('No such environment'),
      409: errorResponse(def.conflicts, isBuild ? errorBodySchema : errorBodySchema.or(s.deployInProgressSchema)),
      422: errorResponse('Invalid body (`fields` names each fault)'),
    },
    async handler(ctx) {
      const task = await requestTask(ctx.deps, ctx.actor, ctx.scope.row, {
        type: def.type,
        skipSteps: ctx.input.body.skip_steps,
      });
      return task;
    },
  }) as RouteDef;
}

const NEVER_QUEUED =
  'Refused with 409 `deploy_in_progress` (with `task_id` of the running task) while a deploy, redeploy or rollback runs ' +
  'on the environment; never queued.';

export const routes: RouteDef[] = [
  taskRoute({
    type: 'deploy',
    operationId: 'deployEnvironment',
    summary:
      "Deploy the head of the environment's git ref: build (unless already built), deploy steps (unless skip_steps), go live",
    description: `${NEVER_QUEUED} 409 \`no_repository\` when the project has no repository.`,
    body: s.deployBody,
    conflicts: 'deploy_in_progress (with task_id) or no_repository',
  }),
  taskRoute({
    type: 'redeploy',
    operationId: 'redeployEnvironment',
    summary: 'Deploy the live release again, deploy steps included unless skip_steps',
    description: NEVER_QUEUED,
    body: s.deployBody,
    conflicts: 'deploy_in_progress (with task_id), no_repository or nothing_to_redeploy',
  }),
  taskRoute({
    type: 'rollback',
    operationId: 'rollbackEnvironment',
    summary: 'Deploy the release that ran before the last successful deployment; code only (no deploy steps)',
    description: NEVER_QUEUED,
    body: s.emptyBody,
    conflicts: 'deploy_in_progress (with task_id), no_repository or nothing_to_roll_back',
  }),
  taskRoute({
    type: 'build',
    operationId: 'buildEnvironment',
    summary: "Build a release of the environment's git ref head without putting it live",
    description:
      'At most BUILD_CONCURRENCY builds run at once across the system, in request order; the task waits `pending` ' +
      '(cancellable) until a slot frees.',
    body: s.emptyBody,
    conflicts: 'no_repository',
  }),
];
