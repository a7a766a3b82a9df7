import { createServer } from 'node:http';
import Koa from 'koa';
import { startBenchSystem, load, printTable, seedDeveloperWithToken } from './harness';

/**
 * Token-authenticated `GET /environments` (a page of 100) through the whole API stack, against a
 * bare Koa handler running the same SQL, in the same run. Target: at least half the bare throughput.
 */
export async function run(): Promise<{ ratio: number }> {
  console.log('[bench] environments: starting a Temporal dev server, a database and the API...');
  const sys = await startBenchSystem('environments');
  try {
    const { knex } = sys.deps;
    const { team, project, token } = await seedDeveloperWithToken(sys);
    await knex('environments').insert(
      Array.from({ length: 150 }, (_, i) => ({ team_id: team.id, project_id: project.id, name: `env-${i}`, git_ref: 'main', port: 30000 + i })),
    );

    // The baseline: the same page query with no authentication, policy, validation or presenter.
    const bare = new Koa();
    bare.use(async (ctx) => {
      const rows = await knex('environments')
        .whereIn('team_id', [team.id])
        .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }])
        .limit(101);
      ctx.body = { data: rows.slice(0, 100), next_before: null };
    });
    const bareServer = createServer(bare.callback());
    await new Promise<void>((r) => bareServer.listen(0, '127.0.0.1', () => r()));
    const barePort = (bareServer.address() as { port: number }).port;

    const check = await fetch(`${sys.apiUrl}/environments?limit=100`, { headers: { authorization: `Bearer ${token}` } });
    const body = (await check.json()) as { data: unknown[] };
    if (check.status !== 200 || body.data.length !== 100) throw new Error(`GET /environments answered ${check.status} with ${body.data?.length} rows`);

    console.log('[bench] environments: warming up...');
    await load('warm-up', `http://127.0.0.1:${barePort}/`, {}, 2);
    await load('warm-up', `${sys.apiUrl}/environments?limit=100`, { authorization: `Bearer ${token}` }, 2);
    console.log('[bench] environments: measuring the bare handler, then the API (8 s each, 10 connections)...');
    const baseline = await load('bare Koa + same SQL', `http://127.0.0.1:${barePort}/`, {});
    const api = await load('GET /environments (token)', `${sys.apiUrl}/environments?limit=100`, { authorization: `Bearer ${token}` });
    await new Promise((r) => bareServer.close(r));
    const ratio = api.requestsPerSecond / baseline.requestsPerSecond;
    printTable('Token-authenticated GET /environments, page of 100', [
      { case: baseline.name, 'req/s': Math.round(baseline.requestsPerSecond), 'p50 ms': baseline.p50, 'p99 ms': baseline.p99, errors: baseline.errors + baseline.non2xx },
      { case: api.name, 'req/s': Math.round(api.requestsPerSecond), 'p50 ms': api.p50, 'p99 ms': api.p99, errors: api.errors + api.non2xx },
    ]);
    console.log(`throughput ratio API / bare = ${ratio.toFixed(2)} (target >= 0.50): ${ratio >= 0.5 ? 'met' : 'NOT met'}`);
    return { ratio };
  } finally {
    await sys.close();
  }
}
