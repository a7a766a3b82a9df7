import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { allRoutes } from '../../api/routes';
import type { RouteDef } from '../../api/lib/define-route';
import { useTestContext } from '../helpers/context';
import { createAccessToken, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import type { Res } from '../helpers/http';

/**
 * Walks the whole route table (read at test time, so routes added later are covered): documentation,
 * token reach, CSRF on browser-session writes, and 401 without credentials.
 */
const t = useTestContext({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
const routes = allRoutes();
const name = (r: RouteDef) => `${r.method.toUpperCase()} ${r.path}`;
const fill = (path: string) => path.replace(/\{[^}]+\}/g, () => crypto.randomUUID());
const send = (agent: ReturnType<typeof t.agent>, r: RouteDef, opts: { noCsrf?: boolean } = {}) =>
  agent.request(r.method.toUpperCase(), fill(r.path), r.method === 'get' ? {} : { body: {}, ...opts });
const isCsrfRefusal = (res: Res) =>
  res.status === 403 && res.body?.error?.code === 'forbidden' && /X-CSRF-Token/.test(res.body.error.message);

/**
 * Every object schema reachable from a route's success responses that does not refuse unknown keys
 * (z.object strips them, z.looseObject lets them through), as "route status: key.path".
 */
function nonStrictObjects(r: RouteDef): string[] {
  const found: string[] = [];
  const seen = new Set<z.core.$ZodType>();
  const walk = (schema: z.core.$ZodType, at: string) => {
    if (seen.has(schema)) return;
    seen.add(schema);
    const def = schema._zod.def;
    if (def.type === 'object') {
      const o = (schema as z.core.$ZodObject)._zod.def;
      if (o.catchall?._zod.def.type !== 'never') found.push(at);
      for (const [key, value] of Object.entries(o.shape)) walk(value, `${at}.${key}`);
      return;
    }
    if (def.type === 'lazy') walk((schema as z.core.$ZodLazy)._zod.def.getter(), at);
    const parts = def as unknown as Record<string, unknown>;
    for (const key of ['innerType', 'element', 'in', 'out', 'left', 'right', 'valueType']) {
      const inner = parts[key] as z.core.$ZodType | undefined;
      if (inner?._zod) walk(inner, at);
    }
    for (const key of ['options', 'items']) {
      const list = parts[key] as z.core.$ZodType[] | undefined;
      if (Array.isArray(list)) list.forEach((inner, i) => walk(inner, `${at}|${i}`));
    }
  };
  for (const [status, res] of Object.entries(r.responses))
    if (Number(status) < 300 && res.schema) walk(res.schema, `${name(r)} ${status}:`);
  return found;
}
/** Answers whose extra keys are meant: the OpenAPI document itself; billing details carry the country's address fields. */
const OPEN_RESPONSE_OBJECTS = [
  'GET /openapi.json 200:',
  'GET /teams/{id}/billing 200:.details',
  'POST /teams/{id}/billing 200:.details',
];

/** The spec's token-reachable endpoints: the narrow, marked set governs (CONTRACT). */
const SPEC_TOKEN_REACHABLE = new Set([
  'GET /me',
  'GET /teams',
  'GET /projects',
  'GET /environments',
  'GET /environments/{}',
  'GET /projects/{}/releases',
  'GET /environments/{}/deploy',
  'GET /environments/{}/source',
  'POST /environments/{}/deploy',
  'POST /environments/{}/redeploy',
  'POST /environments/{}/rollback',
  'POST /environments/{}/build',
  'GET /tasks',
  'GET /tasks/{}',
  'GET /tasks/{}/log',
  'POST /validate',
  'POST /environments/{}/validate',
]);

const sessionRoutes = routes.filter((r) => r.auth === 'session');
const tokenRoutes = routes.filter((r) => r.auth === 'token');
const guarded = routes.filter((r) => r.auth !== 'none');
const sessionWrites = sessionRoutes.filter((r) => r.method !== 'get');

describe('the route table', () => {
  it('has routes of every kind (the walk below is not empty)', () => {
    expect(sessionRoutes.length).toBeGreaterThan(0);
    expect(tokenRoutes.length).toBeGreaterThan(0);
    expect(sessionWrites.length).toBeGreaterThan(0);
  });

  it('gives every route a unique operationId in verb-noun camelCase', () => {
    const ids = routes.map((r) => r.operationId);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    for (const r of routes)
      expect({ route: name(r), operationId: r.operationId }).toEqual({
        route: name(r),
        operationId: expect.stringMatching(/^[a-z]+[A-Z][A-Za-z0-9]*$/),
      });
  });

  it('gives every route a summary and its responses, at least one of them a success', () => {
    for (const r of routes) {
      expect(r.summary?.trim(), name(r)).toBeTruthy();
      const statuses = Object.keys(r.responses).map(Number);
      expect(
        statuses.some((s) => s >= 200 && s < 400),
        `${name(r)} documents a success`,
      ).toBe(true);
      for (const [status, res] of Object.entries(r.responses))
        expect(res.description?.trim(), `${name(r)} ${status}`).toBeTruthy();
    }
  });

  it('documents every success answer with strict object schemas, so that the response check catches a leaked column', () => {
    const open = routes.flatMap(nonStrictObjects);
    expect(open.sort()).toEqual([...OPEN_RESPONSE_OBJECTS].sort());
  });

  it('declares every path parameter in the route params schema', () => {
    for (const r of routes.filter((x) => x.path.includes('{'))) {
      const names = [...r.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
      const json = r.params
        ? (z.toJSONSchema(r.params, { io: 'input', unrepresentable: 'any' }) as { properties?: object })
        : {};
      expect({ route: name(r), params: Object.keys(json.properties ?? {}).sort() }).toEqual({
        route: name(r),
        params: names,
      });
    }
  });

  it("marks for tokens exactly the spec's token-reachable set", () => {
    const marked = tokenRoutes.map((r) => `${r.method.toUpperCase()} ${r.path.replace(/\{[^}]+\}/g, '{}')}`);
    expect(marked.sort()).toEqual([...SPEC_TOKEN_REACHABLE].sort());
  });

  it('lists every route in the OpenAPI document under its operationId', async () => {
    const res = await t.agent().get('/openapi.json');
    expect(res.status).toBe(200);
    const missing = routes.filter((r) => res.body.paths?.[r.path]?.[r.method]?.operationId !== r.operationId).map(name);
    expect(missing).toEqual([]);
    const documented = Object.values(res.body.paths as Record<string, object>).reduce(
      (n, ops) => n + Object.keys(ops).length,
      0,
    );
    expect(documented).toBe(routes.length);
    for (const r of routes)
      expect(res.body.paths[r.path][r.method]['x-token-reachable'], name(r)).toBe(r.auth === 'token');
  });
});

describe('a personal access token', () => {
  let bearer: ReturnType<typeof t.agent> | undefined;
  /** One token (its issuer owns a team) for the whole walk. */
  const tokenAgent = async () => {
    if (!bearer) {
      const user = await createUser(t);
      bearer = t.agent().withBearer(await createAccessToken(t, user, await createTeam(t, user)));
    }
    return bearer;
  };

  it.each(sessionRoutes.map((r) => [name(r), r] as const))(
    'on signed-in-only %s answers 403 token_not_allowed',
    async (_, r) => {
      const res = await send(await tokenAgent(), r);
      expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 403, code: 'token_not_allowed' });
    },
  );

  it.each(tokenRoutes.map((r) => [name(r), r] as const))(
    'on token-reachable %s is not answered token_not_allowed',
    async (_, r) => {
      const res = await send(await tokenAgent(), r);
      expect(res.status).not.toBe(401);
      expect(res.body?.error?.code).not.toBe('token_not_allowed');
      expect(res.status).toBeLessThan(500);
    },
  );
});

describe('a browser session write', () => {
  it.each(sessionWrites.map((r) => [name(r), r] as const))('%s without X-CSRF-Token answers 403', async (_, r) => {
    const agent = await sessionAgent(t, await createUser(t));
    const res = await send(agent, r, { noCsrf: true });
    expect(res.status).toBe(403);
    expect(isCsrfRefusal(res)).toBe(true);
  });

  it.each(sessionWrites.map((r) => [name(r), r] as const))(
    '%s with the right X-CSRF-Token is not refused for CSRF',
    async (_, r) => {
      const agent = await sessionAgent(t, await createUser(t));
      const res = await send(agent, r);
      expect(isCsrfRefusal(res)).toBe(false);
      expect(res.status).not.toBe(401);
      expect(res.status).toBeLessThan(500);
    },
  );

  it('with a wrong X-CSRF-Token answers 403', async () => {
    const agent = await sessionAgent(t, await createUser(t));
    const res = await agent.post('/me/tokens', {}, { headers: { 'x-csrf-token': 'not-the-token' } });
    expect(isCsrfRefusal(res)).toBe(true);
  });
});

describe('no credentials', () => {
  it.each(guarded.map((r) => [name(r), r] as const))('%s answers 401 unauthenticated', async (_, r) => {
    const res = await send(t.agent(), r);
    expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 401, code: 'unauthenticated' });
  });
});
