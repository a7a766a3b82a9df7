/**
 * The rate limit's sliding window (edge/haproxy/rate-limit.ts): a client's count in the project's window, plus the
 * previous window's count for the part of it still within the last `per_seconds`. Requests at the start of a new
 * window still pay for the window just ended; two windows later it is forgotten.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitEdges } from '../../db/queries/edge-routes';
import { useTestContext } from '../helpers/context';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';

const t = useTestContext({ edge: true });
let app: http.Server;

beforeAll(async () => {
  app = http.createServer((_req, res) => res.end('ok\n'));
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  app.closeAllConnections();
  await new Promise((r) => app.close(r));
});

const status = (port: number) =>
  new Promise<number>((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', localAddress: '127.0.0.6', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });

/** Waits until `at` ms into the next window of `windowMs` (HAProxy's windows start at multiples of it since the epoch). */
const intoNext = async (windowMs: number, at: number) => {
  const now = Date.now();
  await new Promise((r) => setTimeout(r, (Math.floor(now / windowMs) + 1) * windowMs + at - now));
};

describe('the rate limit', () => {
  it('counts the window just ended for the part of it still within the last per_seconds, then forgets it', async () => {
    const owner = await createUser(t);
    const project = await createProject(t, await createTeam(t, owner));
    const env = await createEnvironment(t, project, { name: 'window' });
    const port = (app.address() as { port: number }).port;
    await t.deps.knex('edge_routes').insert({
      environment_id: env.id,
      upstreams: JSON.stringify([{ id: '1', host: '127.0.0.1', port }]),
    });
    await awaitEdges(t.deps.knex);
    const api = await sessionAgent(t, owner);
    const windowMs = 4000;
    const patched = await api.patch(`/projects/${project.id}/edge`, { rate_limit: { requests: 4, per_seconds: 4 } });
    expect(patched.status).toBe(200);

    // 4 at the start of a window: all in
    await intoNext(windowMs, 100);
    const first = [];
    for (let i = 0; i < 4; i++) first.push(await status(env.port));
    expect(first).toEqual([200, 200, 200, 200]);
    // early in the next window: the window just ended counts for the part of it still within the last 4 s (HAProxy's
    // integers: 4 x 3800 / 4000 = 3), so the first request is in (3 + 1) and the second is not (3 + 2 > 4); a fixed
    // window would let both in
    await intoNext(windowMs, 200);
    expect([await status(env.port), await status(env.port)]).toEqual([200, 429]);
    // a window later only those 2 count (the refused one too): 2 x 3800 / 4000 = 1, + 1
    await intoNext(windowMs, 200);
    expect(await status(env.port)).toBe(200);
  }, 30_000);
});
