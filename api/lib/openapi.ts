import { z } from 'zod';
import type { RouteDef } from './define-route';
import { takesIdempotencyKey } from './idempotency';
import { TAG_DESCRIPTIONS } from './openapi-tags';
import { API_PREFIX } from './paths';
import { errorBodySchema } from './responses';

function schemaOf(s: z.ZodType, io: 'input' | 'output') {
  const json = z.toJSONSchema(s, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
  delete json.$schema;
  return json;
}

/** The OpenAPI 3.1 document, built from the route table. */
export function buildOpenApi(routes: RouteDef[], baseUrl: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  const tagNames = new Set<string>();
  for (const r of routes) {
    for (const tag of r.tags ?? []) tagNames.add(tag);
    const parameters: unknown[] = [];
    for (const [where, schema] of [
      ['path', r.params],
      ['query', r.query],
    ] as const) {
      if (!schema) continue;
      const json = schemaOf(schema, 'input') as { properties?: Record<string, unknown>; required?: string[] };
      for (const [name, s] of Object.entries(json.properties ?? {})) {
        parameters.push({
          name,
          in: where,
          required: where === 'path' || (json.required ?? []).includes(name),
          schema: s,
        });
      }
    }
    const responses: Record<string, unknown> = {};
    for (const [status, res] of Object.entries(r.responses)) {
      // Every error answer has the one error body unless the route documents a more specific one.
      const schema = res.schema ?? (Number(status) >= 400 ? errorBodySchema : undefined);
      responses[status] = {
        description: res.description,
        ...(schema
          ? { content: { [res.contentType ?? 'application/json']: { schema: schemaOf(schema, 'output') } } }
          : {}),
      };
    }
    const security =
      r.auth === 'none'
        ? []
        : r.auth === 'signature'
          ? [{ gitHookSignature: [] }]
          : r.auth === 'token'
            ? [{ session: [] }, { cliSession: [] }, { accessToken: [] }]
            : [{ session: [] }, { cliSession: [] }];
    const op: Record<string, unknown> = {
      operationId: r.operationId,
      summary: r.summary,
      ...(r.description ? { description: r.description } : {}),
      tags: r.tags ?? [],
      security,
      'x-token-reachable': r.auth === 'token',
      ...(r.permission ? { 'x-permission': r.permission } : {}),
      ...(r.startsTask ? { 'x-idempotency-key': true } : {}),
      ...(r.recentSignInMinutes ? { 'x-recent-sign-in-minutes': r.recentSignInMinutes } : {}),
      ...(parameters.length ? { parameters } : {}),
      responses,
    };
    if (takesIdempotencyKey(r)) {
      parameters.push({
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description: r.startsTask
          ? 'The same key with the same request within 24 hours answers the same task (200) instead of starting another; with another request, 422.'
          : 'The same key with the same request within 24 hours answers what the first request answered (`Idempotent-Replayed: true`) instead of changing anything again; with another request, 422.',
        schema: { type: 'string', minLength: 1, maxLength: 255 },
      });
      if (!op.parameters) op.parameters = parameters;
    }
    if (r.body) {
      const content: Record<string, unknown> = {};
      for (const type of r.bodyTypes ?? ['json']) {
        content[type === 'json' ? 'application/json' : 'multipart/form-data'] = { schema: schemaOf(r.body, 'input') };
      }
      op.requestBody = { required: false, content };
    }
    (paths[r.path] ??= {})[r.method] = op;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Hosting Console API',
      version: 'v1',
      description:
        'Everything the console does. Bodies are JSON. Errors: {"error": {"code", "message", "fields"?}}. ' +
        'Lists: {"data": [...]}, paged lists add "next_before".',
      contact: { name: 'Hosting Console', url: `${baseUrl}${API_PREFIX}/docs` },
    },
    // Every tag the routes use, in the order they first appear, with its description.
    tags: [...tagNames].map((name) =>
      TAG_DESCRIPTIONS[name] ? { name, description: TAG_DESCRIPTIONS[name] } : { name },
    ),
    servers: [{ url: `${baseUrl}${API_PREFIX}` }],
    components: {
      securitySchemes: {
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: 'vc_session',
          description: 'Browser session; writes also send X-CSRF-Token from GET /session/token',
        },
        cliSession: {
          type: 'http',
          scheme: 'bearer',
          description: 'Command-line sign-in (device flow): a vcs_ bearer',
        },
        accessToken: { type: 'http', scheme: 'bearer', description: 'Personal access token: a vcp_ bearer' },
        gitHookSignature: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Hub-Signature-256',
          description:
            "sha256=<hex HMAC-SHA256 of the raw body, keyed with the project's webhook secret> (GitHub's format)",
        },
      },
    },
    paths,
  };
}
