import { createServer, type Server } from 'node:http';
import Koa from 'koa';
import { startApiServer } from '../processes/api-server';
import { sized } from './quick';
import { startBenchSystem, load, median, printTable, seedDeveloperWithToken, type LoadResult } from './harness';

const ROUNDS = sized(4, 1);
const ROUND_SECONDS = sized(3, 1);

/**
 * Token-authenticated `GET /environments` (a page of 100) through the whole API stack, against a
 * bare Koa handler running the same SQL, in the same run. The API runs twice on the same database:
 * with the token look-up cache (as `npm start` runs it) and without (every request looks the token up).
 * The cases take turns in short rounds, so a machine whose load changes during the run (other work on
 * a shared host) weighs on each case alike. Target: at least 0.8x the bare throughput.
 */
export async function run(): Promise<{ ratio: number }> {
  console.log('[bench] environments: starting a Temporal dev server, a database and the API...');
  const sys = await startBenchSystem('environments');
  const servers: Server[] = [];
  try {
    const { knex } = sys.deps;
    const { team, project, token } = await seedDeveloperWithToken(sys);
    await knex('environments').insert(
      Array.from({ length: 150 }, (_, i) => ({
        team_id: team.id,
        project_id: project.id,
        name: `env-${i}`,
        git_ref: 'main',
        port: 30000 + i,
      })),
    );

    // The baseline: the same page query with no authentication, policy, validation or presenter.
    const bare = new Koa();
    bare.use(async (ctx) => {
      const rows = await knex('environments')
        .whereIn('team_id', [team.id])
        .orderBy([
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
        .limit(101);
      ctx.body = { data: rows.slice(0, 100), next_before: null };
    });
    const bareServer = createServer(bare.callback());
    servers.push(bareServer);
    await new Promise<void>((r) => bareServer.listen(0, '127.0.0.1', () => r()));
    const barePort = (bareServer.address() as { port: number }).port;
    // The same API without the cache: the same deps, no credentials.
    const uncached = await startApiServer({ ...sys.deps, credentials: undefined }, 0, '127.0.0.1');
    servers.push(uncached);
    const uncachedUrl = `http://127.0.0.1:${(uncached.address() as { port: number }).port}/api/vc/v1`;

    const auth = { authorization: `Bearer ${token}` };
    const cases = [
      { name: 'bare Koa + same SQL', url: `http://127.0.0.1:${barePort}/`, headers: {} },
      { name: 'GET /environments (token, no cache)', url: `${uncachedUrl}/environments?limit=100`, headers: auth },
      { name: 'GET /environments (token)', url: `${sys.apiUrl}/environments?limit=100`, headers: auth },
    ];
    for (const c of cases.slice(1)) {
      const check = await fetch(c.url, { headers: c.headers });
      const body = (await check.json()) as { data: unknown[] };
      if (check.status !== 200 || body.data.length !== 100)
        throw new Error(`${c.name} answered ${check.status} with ${body.data?.length} rows`);
    }

    console.log('[bench] environments: warming up...');
    for (const c of cases) await load('warm-up', c.url, c.headers, 2);
    console.log(
      `[bench] environments: ${ROUNDS} rounds of ${ROUND_SECONDS} s per case, taking turns (10 connections)...`,
    );
    const results: LoadResult[][] = cases.map(() => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, c] of cases.entries()) results[i].push(await load(c.name, c.url, c.headers, ROUND_SECONDS));
    }
    const summary = results.map((rs) => ({
      name: rs[0].name,
      requestsPerSecond: rs.reduce((s, r) => s + r.requestsPerSecond, 0) / rs.length,
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      errors: rs.reduce((s, r) => s + r.errors + r.non2xx, 0),
    }));
    const [baseline, before, api] = summary;
    printTable(
      'Token-authenticated GET /environments, page of 100',
      summary.map((s) => ({
        case: s.name,
        'req/s': Math.round(s.requestsPerSecond),
        'p50 ms': s.p50,
        'p99 ms': s.p99,
        errors: s.errors,
        'x bare': Number((s.requestsPerSecond / baseline.requestsPerSecond).toFixed(2)),
      })),
    );
    const ratio = api.requestsPerSecond / baseline.requestsPerSecond;
    const rounds = results[2]
      .map((r, i) => (r.requestsPerSecond / results[0][i].requestsPerSecond).toFixed(2))
      .join(', ');
    console.log(
      `ratio per round (API / bare): ${rounds}; without the cache: ${(before.requestsPerSecond / baseline.requestsPerSecond).toFixed(2)}`,
    );
    console.log(
      `throughput ratio API / bare = ${ratio.toFixed(2)} (target >= 0.80): ${ratio >= 0.8 ? 'met' : 'NOT met'}`,
    );
    return { ratio };
  } finally {
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
    await sys.close();
  }
}
