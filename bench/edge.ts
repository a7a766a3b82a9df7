import { createServer } from 'node:http';
import { createDatabase, dropDatabase, withDatabase } from '../db/database';
import { createKnex } from '../db/knex';
import { migrateLatest } from '../db/migrate';
import { startEdge } from '../edge/server';
import { freePort } from '../test/helpers/ports';
import { ADMIN_DATABASE_URL, load, printTable } from './harness';

/**
 * A small GET through the edge with every project rule on (blocked addresses and user agents, a rate
 * limit set high, HSTS; compression off) and an allow list on the environment, against the app directly,
 * in the same run. Targets: the edge keeps at least 80% of the direct throughput and adds under 1 ms at p50.
 * The edge needs only PostgreSQL (no Temporal, no worker), so this bench starts just a database.
 */
export async function run(): Promise<{ ratio: number }> {
  console.log('[bench] edge: starting a database, an app and the edge...');
  const dbName = `vc_bench_edge_${process.pid}`;
  await dropDatabase(ADMIN_DATABASE_URL, dbName);
  await createDatabase(ADMIN_DATABASE_URL, dbName);
  const databaseUrl = withDatabase(ADMIN_DATABASE_URL, dbName);
  const knex = createKnex(databaseUrl);
  await migrateLatest(knex);

  const app = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('hello from the app\n');
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', () => r()));
  const appPort = (app.address() as { port: number }).port;

  const [team] = await knex('teams').insert({ name: 'Bench', settings: {} }).returning('id');
  const [project] = await knex('projects').insert({ team_id: team.id, name: 'bench' }).returning('id');
  const envPort = await freePort();
  const [env] = await knex('environments')
    .insert({ team_id: team.id, project_id: project.id, name: 'production', git_ref: 'main', port: envPort })
    .returning('id');
  await knex('edge_routes').insert({ environment_id: env.id, upstream_host: '127.0.0.1', upstream_port: appPort });
  await knex('environment_edges').insert({
    environment_id: env.id,
    allowed_addresses: JSON.stringify(['127.0.0.0/8', '::1/128']),
  });
  await knex('project_edges').insert({
    project_id: project.id,
    blocked_addresses: JSON.stringify(['10.0.0.0/8', '192.0.2.0/24', '2001:db8::/32']),
    blocked_user_agents: JSON.stringify(['evilbot', 'scrapy', 'masscan']),
    rate_limit: JSON.stringify({ requests: 100_000_000, per_seconds: 60 }),
    hsts: JSON.stringify({ max_age: 31536000, include_subdomains: true, preload: false }),
    compression: false,
  });
  const edge = await startEdge({ knex, databaseUrl, host: '127.0.0.1', edgePort: 0 });
  try {
    const check = await fetch(`http://127.0.0.1:${envPort}/`);
    if (check.status !== 200) throw new Error(`the edge answered ${check.status}`);
    console.log('[bench] edge: warming up...');
    await load('warm-up', `http://127.0.0.1:${appPort}/`, {}, 2);
    await load('warm-up', `http://127.0.0.1:${envPort}/`, {}, 2);
    console.log('[bench] edge: measuring the app directly, then through the edge (8 s each, 10 connections)...');
    const direct = await load('app directly', `http://127.0.0.1:${appPort}/`, {});
    const through = await load('through the edge, all rules on', `http://127.0.0.1:${envPort}/`, {});
    const ratio = through.requestsPerSecond / direct.requestsPerSecond;
    printTable('A small GET: the app directly vs through the edge', [
      {
        case: direct.name,
        'req/s': Math.round(direct.requestsPerSecond),
        'p50 ms': direct.p50,
        'p99 ms': direct.p99,
        errors: direct.errors + direct.non2xx,
      },
      {
        case: through.name,
        'req/s': Math.round(through.requestsPerSecond),
        'p50 ms': through.p50,
        'p99 ms': through.p99,
        errors: through.errors + through.non2xx,
      },
    ]);
    const added = through.p50 - direct.p50;
    console.log(
      `throughput ratio edge / direct = ${ratio.toFixed(2)} (target >= 0.80): ${ratio >= 0.8 ? 'met' : 'NOT met'}`,
    );
    console.log(`p50 added by the edge = ${added.toFixed(2)} ms (target < 1 ms): ${added < 1 ? 'met' : 'NOT met'}`);
    return { ratio };
  } finally {
    await edge.close();
    await new Promise((r) => app.close(r));
    await knex.destroy();
    await dropDatabase(ADMIN_DATABASE_URL, dbName);
  }
}
