import { describe, expect, it } from 'vitest';
import { allRoutes } from '../../api/routes';
import type { RouteDef } from '../../api/lib/define-route';
import { useTestContext } from '../helpers/context';
import { createDeployWorld } from '../helpers/deploy-fixtures';
import { sessionAgent } from '../helpers/fixtures';

// Raise the token limit: this walk sends a few thousand requests with one token.
const t = useTestContext({ worker: true, env: { RATE_LIMIT_PER_MINUTE: '100000' } });

/** Values of every JSON type, and of the wrong shapes clients send. */
const JUNK: unknown[] = [
  null,
  true,
  0,
  -1,
  1.5,
  1e308,
  '',
  ' ',
  'x'.repeat(5000),
  '../../etc/passwd',
  "'; drop table users; --",
  '\u0000',
  '😀',
  [],
  [1, 'a'],
  {},
  { nested: { deeper: [null] } },
];

/** Bodies: junk as the whole body, and junk in each field the route's schema names. */
function bodiesFor(route: RouteDef): unknown[] {
  const bodies: unknown[] = [...JUNK];
  const shape = (route.body as { shape?: Record<string, unknown> } | undefined)?.shape ?? {};
  for (const field of Object.keys(shape)) for (const value of JUNK) bodies.push({ [field]: value });
  return bodies;
}

/** Query strings: junk in each parameter the route's schema names, and an unknown one. */
function queriesFor(route: RouteDef): string[] {
  const shape = (route.query as { shape?: Record<string, unknown> } | undefined)?.shape ?? {};
  const values = ['', '-1', '0', '1e9', 'abc', '%00', 'null', '[]', 'x'.repeat(3000)];
  const queries = ['?unknown=1'];
  for (const name of Object.keys(shape)) for (const v of values) queries.push(`?${name}=${encodeURIComponent(v)}`);
  return queries;
}

describe('no client input produces a 500', () => {
  it('walks every route with junk bodies, queries and ids, as a signed-in owner and as a token', async () => {
    const w = await createDeployWorld(t);
    const owner = await sessionAgent(t, w.owner);
    const ids: Record<string, string> = { teams: w.team.id, projects: w.project.id, environments: w.environment.id };
    const pathFor = (route: RouteDef, idStyle: 'real' | 'random' | 'junk') =>
      route.path.replace(/\{([a-z_]+)\}/gi, (_, name: string) => {
        if (idStyle === 'junk') return encodeURIComponent("not-an-id'");
        if (idStyle === 'random') return crypto.randomUUID();
        const area = route.path.split('/')[1];
        return name === 'id' && ids[area] ? ids[area] : crypto.randomUUID();
      });

    // Destructive routes last, so the rest meet the world intact.
    const routes = [...allRoutes()].sort((a, b) => Number(a.method === 'delete') - Number(b.method === 'delete'));
    const failures: string[] = [];
    let requests = 0;
    for (const route of routes) {
      const method = route.method.toUpperCase();
      const callers = route.auth === 'token' ? [owner, w.api] : [owner];
      for (const caller of callers) {
        for (const idStyle of ['junk', 'random', 'real'] as const) {
          const path = pathFor(route, idStyle);
          const sends: Array<{ path: string; body?: unknown }> = queriesFor(route).map((q) => ({ path: path + q }));
          if (method !== 'GET') for (const body of bodiesFor(route)) sends.push({ path, body });
          for (const send of sends) {
            const res = await caller.request(method, send.path, send.body === undefined ? {} : { body: send.body });
            requests++;
            if (res.status >= 500) failures.push(`${method} ${send.path.slice(0, 120)} ${JSON.stringify(send.body)?.slice(0, 80)} -> ${res.status}`);
          }
        }
      }
    }
    expect(requests).toBeGreaterThan(1000);
    expect(failures).toEqual([]);
  });
});
