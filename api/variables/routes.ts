import { defineRoute, type RouteDef } from '../lib/define-route';
import { errorResponse as error } from '../lib/responses';
import * as s from './schemas';
import * as variables from './service';
import { environmentScope, projectScope } from './scopes';
import { scopes, type Scope, type ScopeRow } from '../lib/scopes';
import type { Scope as VariableScope } from './service';
import { z } from 'zod';
import { taskSchema } from '../tasks/schemas';
import { presentEffective, presentVariable } from './presenter';
import { applyToEnvironment, applyToProject } from './apply-service';

const tags = ['variables'];
const SECRET_NOTE = 'A secret value is write-only: every answer shows it as null.';
const SIZE_NOTE =
  'The whole environment of a process (every scope and the built-ins) is at most 1 MiB: a change that would pass it ' +
  'for any environment it reaches (project variables reach every environment of the project) is 422, nothing saved.';
const IMPORT_NOTE =
  'Saves what POST /variables/parse reads, all or nothing: a name that exists is skipped unless `overwrite`; ' +
  '`secret` marks every created or updated variable secret. A malformed line: 422 on text ("line N: reason"), nothing saved. ' +
  SIZE_NOTE;

export const routes: RouteDef[] = [
  defineRoute({
    method: 'post',
    path: '/variables/parse',
    operationId: 'parseVariables',
    summary: 'Reads a pasted .env back, saving nothing',
    description:
      'Blank lines and # comments are skipped; `export NAME=value` is accepted; \'...\' is literal; "..." may span lines and knows ' +
      '\\n, \\" and \\\\; an unquoted value ends at " #". Any other line, or a name given twice: 422 on text ("line N: reason").',
    tags,
    auth: 'session',
    body: s.parseBody,
    responses: {
      200: { description: 'The variables read, with their lines', schema: s.parsedSchema },
      422: error('A line is malformed'),
    },
    async handler(ctx) {
      ctx.body = variables.parseText(ctx.input.body.text);
    },
  }),

  // ---- project ------------------------------------------------------------------------------------
  defineRoute({
    method: 'get',
    path: '/projects/{id}/variables',
    operationId: 'listProjectVariables',
    summary: "The project's variables, by name",
    description: SECRET_NOTE,
    tags,
    auth: 'session',
    permission: 'config:read',
    scope: scopes.project,
    params: s.idParams,
    responses: {
      200: { description: 'Variables', schema: s.variableListSchema },
      403: error('Role may not'),
      404: error('No such project'),
    },
    async handler(ctx) {
      const scope = projectScope(ctx.scope.row);
      return variables.listOwn(ctx.deps, scope);
    },
    present: presentVariable,
  }),
  ...ownVariableRoutes('project', scopes.project, projectScope),

  // ---- environment --------------------------------------------------------------------------------
  defineRoute({
    method: 'get',
    path: '/environments/{id}/variables',
    operationId: 'listEnvironmentVariables',
    summary: "The environment's effective variables: the project's, overridden by its own; each with its source",
    description: SECRET_NOTE,
    tags,
    auth: 'session',
    permission: 'config:read',
    scope: scopes.environment,
    params: s.idParams,
    responses: {
      200: { description: 'The effective set', schema: s.effectiveVariableListSchema },
      403: error('Role may not'),
      404: error('No such environment'),
    },
    async handler(ctx) {
      const scope = environmentScope(ctx.scope.row);
      const { variables: list, live } = await variables.listEffective(ctx.deps, scope.environmentId!);
      ctx.body = { data: list.map(presentEffective), live };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/environments/{id}/variables/{name}',
    operationId: 'getEnvironmentVariable',
    summary: 'One entry of the effective set, with its source',
    description: SECRET_NOTE,
    tags,
    auth: 'session',
    permission: 'config:read',
    scope: scopes.environment,
    params: s.nameParams,
    responses: {
      200: { description: 'The entry', schema: s.effectiveVariableSchema },
      403: error('Role may not'),
      404: error('No such environment or variable'),
    },
    async handler(ctx) {
      const scope = environmentScope(ctx.scope.row);
      return variables.getEffective(ctx.deps, scope.environmentId!, ctx.input.params.name);
    },
    present: presentEffective,
  }),
  ...ownVariableRoutes('environment', scopes.environment, environmentScope),
] as RouteDef[];

const applyRoutes: RouteDef[] = [
  defineRoute({
    method: 'post',
    path: '/environments/{id}/variables/apply',
    operationId: 'applyEnvironmentVariables',
    summary: "Restarts the environment's web processes with the current variables, without a build",
    description:
      'A `configuration`/`apply_variables` task; not refused while other tasks run: it waits `pending` while an exclusive ' +
      'change (deploy, restore, storage_move...) runs on the environment, and never runs beside one. Fails when no release is live.',
    tags,
    auth: 'session',
    permission: 'deploy',
    scope: scopes.environment,
    startsTask: true,
    params: s.idParams,
    responses: {
      202: { description: 'The task', schema: taskSchema },
      403: error('Role may not'),
      404: error('No such environment'),
    },
    async handler(ctx) {
      return applyToEnvironment(ctx.deps, ctx.actor, ctx.scope.row);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/projects/{id}/variables/apply',
    operationId: 'applyProjectVariables',
    summary: 'Applies the current variables to every environment of the project with a live release',
    description: 'One `apply_variables` task for each environment with a live release (none: an empty list).',
    tags,
    auth: 'session',
    permission: 'deploy',
    scope: scopes.project,
    startsTask: true,
    params: s.idParams,
    responses: {
      202: { description: 'The tasks', schema: z.strictObject({ data: z.array(taskSchema) }) },
      403: error('Role may not'),
      404: error('No such project'),
    },
    async handler(ctx) {
      return applyToProject(ctx.deps, ctx.actor, ctx.input.params.id);
    },
  }),
] as RouteDef[];

routes.push(...applyRoutes);

/**
 * Setting, removing and importing a level's own variables: the same at both levels, but for the scope they
 * write to (an environment's own values override the project's of the same name).
 */
function ownVariableRoutes<R extends ScopeRow>(
  level: 'project' | 'environment',
  scope: Scope<R>,
  scopeOf: (row: R) => VariableScope,
): RouteDef[] {
  const project = level === 'project';
  const Level = project ? 'Project' : 'Environment';
  const base = `/${level}s/{id}/variables`;
  const common = {
    tags,
    auth: 'session' as const,
    permission: 'config:write' as const,
    scope,
  };
  return [
    defineRoute({
      ...common,
      method: 'post',
      path: base,
      operationId: `set${Level}Variable`,
      summary: project
        ? 'Creates (201) or replaces (200) a project variable'
        : "Creates (201) or replaces (200) the environment's own value of a variable",
      description: project
        ? `${SECRET_NOTE} Names: [A-Za-z_][A-Za-z0-9_]*, at most 128; PORT and VC_* are reserved. Values up to 64 KiB; 500 a scope. ${SIZE_NOTE}`
        : `${SECRET_NOTE} It overrides the project's value of the same name. Rules as for project variables. ${SIZE_NOTE}`,
      params: s.idParams,
      body: s.setVariableBody,
      responses: {
        200: { description: 'Replaced', schema: s.variableSchema },
        201: { description: 'Created', schema: s.variableSchema },
        403: error('Role may not'),
        404: error(`No such ${level}`),
        422: error('Invalid fields'),
      },
      async handler(ctx) {
        const r = await variables.setVariable(ctx.deps, ctx.actor, scopeOf(ctx.scope.row), ctx.input.body);
        ctx.status = r.created ? 201 : 200;
        return r.variable;
      },
      present: presentVariable,
    }),
    defineRoute({
      ...common,
      method: 'delete',
      path: `${base}/{name}`,
      operationId: `delete${Level}Variable`,
      description: project
        ? 'Removes a project-level variable; environments that had no value of their own stop getting it at their next build, deploy or apply.'
        : "Removes the environment's own value; the project's value, if any, applies again. Running processes keep their environment until the next deploy or `variables/apply`.",
      summary: project
        ? 'Removes a project variable'
        : "Removes the environment's own value (the project's, if any, applies again)",
      params: s.nameParams,
      responses: {
        204: { description: 'Removed' },
        403: error('Role may not'),
        404: error(project ? 'No such project or variable' : 'No such environment, or it has no own value'),
      },
      async handler(ctx) {
        await variables.deleteVariable(ctx.deps, ctx.actor, scopeOf(ctx.scope.row), ctx.input.params.name);
        ctx.status = 204;
      },
    }),
    defineRoute({
      ...common,
      method: 'post',
      path: `${base}/import`,
      operationId: `import${Level}Variables`,
      summary: project
        ? 'Imports pasted .env text into the project, all or nothing'
        : "Imports pasted .env text as the environment's own values, all or nothing",
      description: IMPORT_NOTE,
      params: s.idParams,
      body: s.importBody,
      responses: {
        200: { description: 'What happened to each name', schema: s.importResultSchema },
        403: error('Role may not'),
        404: error(`No such ${level}`),
        422: error('A malformed line, or too many variables'),
      },
      async handler(ctx) {
        ctx.body = await variables.importVariables(ctx.deps, ctx.actor, scopeOf(ctx.scope.row), ctx.input.body);
      },
    }),
  ] as RouteDef[];
}
