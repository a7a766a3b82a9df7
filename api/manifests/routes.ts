import { defineRoute, type RouteDef } from '../lib/define-route';
import { scopes } from '../lib/scopes';
import * as s from './schemas';
import { validateEnvironmentManifest, validateManifest } from './service';
import { errorResponse as error } from '../lib/responses';

const tags = ['manifests'];
const FIELDS =
  '422 `invalid`: `fields` names each fault under its key path in the manifest (`colour`: unknown key, `build.1`: wrong type, ' +
  '`manifest`: the document as a whole, e.g. YAML syntax), each reason ending with its line, e.g. "unknown key (line 5)".';

export const routes: RouteDef[] = [
  defineRoute({
    method: 'post',
    path: '/validate',
    operationId: 'validateManifest',
    summary: 'Check a manifest (the text of a service.yaml)',
    description: FIELDS,
    tags,
    auth: 'token',
    permission: 'validate',
    body: s.validateBody,
    responses: {
      200: { description: 'Valid; the manifest as it will be read', schema: s.validResultSchema },
      422: error('Invalid manifest (fields name each fault with its line), or a missing/invalid `manifest` field'),
    },
    async handler(ctx) {
      ctx.body = await validateManifest(ctx.deps, ctx.actor, ctx.input.body);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/environments/{id}/validate',
    operationId: 'validateEnvironmentManifest',
    summary: "Check a manifest for an environment: the body's, or service.yaml at the head of its git ref",
    description:
      'Without `manifest` in the body, service.yaml is read at the commit the git ref names now (`source` says which; a commit ' +
      'without the file is an empty, valid manifest). ' +
      FIELDS +
      ' 409 no_repository, repository_unreachable or ref_not_found when the file cannot be read.',
    tags,
    auth: 'token',
    permission: 'validate',
    scope: scopes.environment,
    params: s.idParams,
    body: s.validateEnvironmentBody,
    responses: {
      200: { description: 'Valid', schema: s.validResultSchema },
      404: error("No such environment (or another team's)"),
      409: error('no_repository, repository_unreachable or ref_not_found'),
      422: error('Invalid manifest (fields name each fault with its line)'),
    },
    async handler(ctx) {
      ctx.body = await validateEnvironmentManifest(ctx.deps, ctx.actor, ctx.input.params.id, ctx.input.body);
    },
  }),
] as RouteDef[];
