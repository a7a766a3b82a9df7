import { defineRoute, type RouteDef } from '../lib/define-route';
import { scopes } from '../lib/scopes';
import * as s from './schemas';
import * as projects from './service';
import { errorResponse as error } from '../lib/responses';
import { getRepository, reconnectRepository } from './repository-service';
import { presentProject, presentRepository } from './presenter';

const tags = ['projects'];

export const routes: RouteDef[] = [
  defineRoute({
    method: 'get',
    path: '/projects',
    operationId: 'listProjects',
    description:
      'Reachable with a personal access token (its one team only). A signed-in caller sees the projects of every team it belongs to; `team_id` narrows the list to one.',
    summary: 'The projects of the teams the caller reaches (a token: its one team); optional team_id filter',
    tags,
    auth: 'token',
    permission: 'project:read',
    query: s.listProjectsQuery,
    responses: { 200: { description: 'Projects', schema: s.projectListSchema }, 422: error('Invalid filter') },
    handler: (ctx) => projects.listProjects(ctx.deps, ctx.actor, ctx.input.query),
    present: presentProject,
  }),
  defineRoute({
    method: 'get',
    path: '/projects/new',
    operationId: 'getNewProjectChoices',
    summary: 'What creating a project asks for: the teams the caller may create projects in and the name rules',
    description: 'Blocked (`blocked: true, reason: "no_team"`) when the caller is owner or admin of no team.',
    tags,
    auth: 'session',
    responses: { 200: { description: 'Choices', schema: s.newProjectSchema } },
    async handler(ctx) {
      ctx.body = await projects.newProjectChoices(ctx.deps, ctx.actor);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/projects',
    operationId: 'createProject',
    summary: 'Creates a project in a team',
    description:
      'Admins and owners. Names: 1-63 of a-z, 0-9 and "-", no dash first or last, unique in the team (409 on name).',
    tags,
    auth: 'session',
    permission: 'project:create',
    body: s.createProjectBody,
    responses: {
      201: { description: 'The project', schema: s.projectSchema },
      403: error('Role may not create projects'),
      404: error('No such team'),
      409: error('Name taken in the team'),
      422: error('Invalid fields'),
    },
    async handler(ctx) {
      ctx.status = 201;
      return projects.createProject(ctx.deps, ctx.actor, ctx.input.body);
    },
    present: presentProject,
  }),
  defineRoute({
    method: 'delete',
    path: '/projects/{id}',
    operationId: 'deleteProject',
    description:
      "Answers 204 once the project has no environments, else 409 `project_not_empty`; cancel the project first to stop and later remove its environments. The deleted environments' tombstones go with the project; their snapshots are deleted from their destinations by the next daily prune.",
    summary: 'Deletes a project that has no environments',
    tags,
    auth: 'session',
    permission: 'project:delete',
    scope: scopes.project,
    params: s.idParams,
    responses: {
      204: { description: 'Deleted' },
      403: error('Role may not'),
      404: error('No such project'),
      409: error('project_not_empty'),
    },
    async handler(ctx) {
      await projects.deleteProject(ctx.deps, ctx.actor, ctx.input.params.id);
      ctx.status = 204;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/projects/{id}/repository',
    operationId: 'getProjectRepository',
    description:
      "The repository URL without its credentials, the default branch, whether it was reachable at the last check and when, and the git hook's `webhook_url` (never its secret). `url` is null before a repository is connected.",
    summary: "The project's git repository (shown without credentials), or url null",
    tags,
    auth: 'session',
    permission: 'project:read',
    scope: scopes.project,
    params: s.idParams,
    responses: { 200: { description: 'Repository', schema: s.repositorySchema }, 404: error('No such project') },
    async handler(ctx) {
      return getRepository(ctx.deps, ctx.input.params.id);
    },
    present: (row, ctx) => presentRepository(ctx.deps.config, row),
  }),
  defineRoute({
    method: 'post',
    path: '/projects/{id}/repository/reconnect',
    operationId: 'reconnectProjectRepository',
    summary: 'Checks access to the repository again with the current credentials and answers the repository',
    description:
      'Updates reachable, default_branch and checked_at (`git ls-remote`, 20 s). An unreachable repository answers ' +
      '200 with reachable false and a fixed reason. 409 no_repository when none is connected.',
    tags,
    auth: 'session',
    permission: 'project:update',
    scope: scopes.project,
    params: s.idParams,
    responses: {
      200: { description: 'Repository after the check', schema: s.repositorySchema },
      403: error('Role may not'),
      404: error('No such project'),
      409: error('no_repository'),
    },
    async handler(ctx) {
      return reconnectRepository(ctx.deps, ctx.input.params.id);
    },
    present: (row, ctx) => presentRepository(ctx.deps.config, row),
  }),
  defineRoute({
    method: 'post',
    path: '/projects/{id}/repository',
    operationId: 'connectProjectRepository',
    summary:
      'Connects a git repository: an https, http, ssh or git URL, user@host:path, or a local path under LOCAL_REPOSITORY_ROOTS',
    description:
      'Checked with `git ls-remote` (20 s, never prompting); when git cannot read it the answer is 422 on url and nothing changes. ' +
      'Local paths and file:// URLs only under LOCAL_REPOSITORY_ROOTS and never inside DATA_DIR; hosts that resolve to ' +
      'loopback, private or link-local addresses only when listed in OUTBOUND_ALLOWED_HOSTS. Failures read as a few fixed ' +
      "reasons (unreachable, not found, authentication failed), never git's own text. Credentials in an http(s) URL are " +
      'kept encrypted apart from it and never shown: answers show the URL without user info.',
    tags,
    auth: 'session',
    permission: 'project:update',
    scope: scopes.project,
    params: s.idParams,
    body: s.connectRepositoryBody,
    responses: {
      200: { description: 'Connected', schema: s.connectedRepositorySchema },
      403: error('Role may not'),
      404: error('No such project'),
      422: error('Not a repository git can read'),
    },
    async handler(ctx) {
      return projects.connectRepository(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.body);
    },
    present: (row, ctx) => presentRepository(ctx.deps.config, row),
  }),
] as RouteDef[];
