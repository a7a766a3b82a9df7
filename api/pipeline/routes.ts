import { defineRoute, type RouteDef } from '../lib/define-route';
import { scopes } from '../lib/scopes';
import * as s from './schemas';
import { deployChoices, environmentSource, listReleases } from './service';
import { errorResponse as error } from '../lib/responses';

const tags = ['pipeline'];

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/projects/{id}/releases',
    operationId: 'listProjectReleases',
    summary: "The project's releases, newest first; `branch` narrows to one git ref",
    description:
      '`live` marks the release its environment serves now. `limit` 1-100 (default 20); `next_before` back as `before` for the next page.',
    tags,
    auth: 'token',
    permission: 'project:read',
    scope: scopes.project,
    params: s.idParams,
    query: s.listReleasesQuery,
    responses: {
      200: { description: 'A page of releases', schema: s.releasePageSchema },
      404: error("No such project (or another team's)"),
      422: error('Invalid branch, limit or cursor'),
    },
    async handler(ctx) {
      ctx.body = await listReleases(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.query);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/environments/{id}/deploy',
    operationId: 'getEnvironmentDeployChoices',
    summary: 'What a deploy of the environment would do now, or why none can be asked',
    description:
      '`allowed: true` with the git ref, the commit it names now (`head_commit`), whether that commit is already built, the live ' +
      'release and the release a rollback would restore; `skip_steps` may be sent. `allowed: false` with `reason`: forbidden (the ' +
      "caller's role may not deploy), no_repository, deploy_in_progress (with `task_id`), repository_unreachable or ref_not_found.",
    tags,
    auth: 'token',
    permission: 'environment:read',
    scope: scopes.environment,
    params: s.idParams,
    responses: {
      200: { description: 'The choices, or a blocked answer', schema: s.deployChoicesSchema },
      404: error("No such environment (or another team's)"),
    },
    async handler(ctx) {
      ctx.body = await deployChoices(ctx.deps, ctx.actor, ctx.input.params.id);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/environments/{id}/source',
    operationId: 'getEnvironmentSource',
    summary: "Where the environment's code comes from: repository, git ref and the commit it names now",
    description:
      'The repository URL is shown without credentials; `repository` is null when none is connected. `head_commit` comes from ' +
      'git ls-remote; when the repository cannot be read (or lacks the ref) it is null and `error` says why.',
    tags,
    auth: 'token',
    permission: 'environment:read',
    scope: scopes.environment,
    params: s.idParams,
    responses: {
      200: { description: 'The source', schema: s.sourceSchema },
      404: error("No such environment (or another team's)"),
    },
    async handler(ctx) {
      ctx.body = await environmentSource(ctx.deps, ctx.actor, ctx.input.params.id);
    },
  }),
] as RouteDef[];
