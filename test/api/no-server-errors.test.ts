import { describe, expect, it } from 'vitest';
import { allRoutes } from '../../api/routes';
import type { RouteDef } from '../../api/lib/define-route';
import { useTestContext } from '../helpers/context';
import { createDeployWorld } from '../helpers/deploy-fixtures';
import { sessionAgent } from '../helpers/fixtures';
import { bodiesFor, queriesFor } from '../helpers/junk';

// Raise the token limit: this walk sends a few thousand requests with one token.
const t = useTestContext({ worker: true, edge: false, env: { RATE_LIMIT_PER_MINUTE: '100000' } });

describe('no client input produces a 500', () => {
  it('walks every route with junk bodies, queries and ids, as a signed-in owner and as a token', {
    timeout: 600_000,
  }, async () => {
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
          // A scoped route answers a path that names nothing it can reach (junk, an unknown id) with 404 before it
          // reads a body (api/lib/router.ts: the path, then the scope, then the body): there one body, the last
          // (keyed), is enough; every body goes with the real ids. Nearly half the walk's requests, all 404s.
          const bodies = method === 'GET' ? [] : bodiesFor(route);
          for (const body of idStyle !== 'real' && route.scope ? bodies.slice(-1) : bodies) sends.push({ path, body });
          // A few requests at a time: the walk grows with every route.
          for (let i = 0; i < sends.length; i += 8) {
            await Promise.all(
              sends.slice(i, i + 8).map(async (send, j) => {
                // each write's last send under an Idempotency-Key of its own (api/lib/idempotency.ts keeps its answer)
                const keyed =
                  method !== 'GET' && i + j === sends.length - 1
                    ? { headers: { 'idempotency-key': crypto.randomUUID() } }
                    : {};
                const res = await caller.request(
                  method,
                  send.path,
                  send.body === undefined ? keyed : { ...keyed, body: send.body },
                );
                requests++;
                if (res.status >= 500)
                  failures.push(
                    `${method} ${send.path.slice(0, 120)} ${JSON.stringify(send.body)?.slice(0, 80)} -> ${res.status}`,
                  );
              }),
            );
          }
        }
      }
    }
    expect(requests).toBeGreaterThan(1000);
    expect(failures).toEqual([]);
  });
});
