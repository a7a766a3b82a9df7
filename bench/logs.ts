import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createDatabase, dropDatabase, withDatabase } from '../db/database';
import { createKnex } from '../db/knex';
import { migrateLatest } from '../db/migrate';
import { destinationColumns } from '../db/queries/log-settings';
import { startEdge } from '../edge/server';
import { startRequestShipper } from '../processes/shipper-runtime';
import { loadSecrets } from '../system/secrets';
import { freePortRange } from '../test/helpers/ports';
import { ADMIN_DATABASE_URL, load, printTable } from './harness';

/**
 * The cost of the request log: a small GET through the edge without log shipping, then through an edge
 * that writes every request to the machine's day file and ships it in batches to a real HTTP collector on
 * loopback, in the same run; and how many lines the collector got. Target: shipping keeps at least 90% of
 * the throughput of the edge without it.
 */
export async function run(): Promise<{ ratio: number }> {
  console.log('[bench] logs: starting a database, an app, a collector and two edges...');
  const dbName = `vc_bench_logs_${process.pid}`;
  await dropDatabase(ADMIN_DATABASE_URL, dbName);
  await createDatabase(ADMIN_DATABASE_URL, dbName);
  const databaseUrl = withDatabase(ADMIN_DATABASE_URL, dbName);
  const knex = createKnex(databaseUrl);
  await migrateLatest(knex);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'vc-bench-logs-'));
  const secrets = loadSecrets(dataDir);

  const app = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('hello from the app\n');
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', () => r()));
  const appPort = (app.address() as { port: number }).port;
  let collected = 0;
  const collector = createServer((req, res) => {
    req.on('data', (c: Buffer) => {
      for (const b of c) if (b === 10) collected++;
    });
    req.on('end', () => res.end());
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', () => r()));
  const collectorPort = (collector.address() as { port: number }).port;

  const [team] = await knex('teams').insert({ name: 'Bench', settings: {} }).returning('id');
  const [project] = await knex('projects').insert({ team_id: team.id, name: 'bench' }).returning('id');
  const ports = await freePortRange(1);
  const envPort = ports.from;
  const [env] = await knex('environments')
    .insert({ team_id: team.id, project_id: project.id, name: 'production', git_ref: 'main', port: envPort })
    .returning('id');
  await knex('edge_routes').insert({ environment_id: env.id, upstream_host: '127.0.0.1', upstream_port: appPort });
  await knex('project_log_settings').insert({
    project_id: project.id,
    ...destinationColumns(secrets, project.id, {
      kind: 'http',
      name: 'bench collector',
      url: `http://127.0.0.1:${collectorPort}/in`,
    }),
    can_send: true,
  });
  const url = `http://127.0.0.1:${envPort}/`;
  try {
    let edge = await startEdge({
      knex,
      databaseUrl,
      host: '127.0.0.1',
      edgePort: 0,
      environmentPorts: ports,
      dataDir,
      secrets,
    });
    console.log('[bench] logs: measuring the edge without, then with log shipping (8 s each, 10 connections)...');
    await load('warm-up', url, {}, 2);
    const without = await load('edge, no request log', url, {});
    await edge.close();
    edge = await startEdge({
      knex,
      databaseUrl,
      host: '127.0.0.1',
      edgePort: 0,
      environmentPorts: ports,
      dataDir,
      secrets,
      requestLog: true,
    });
    // the request log's shipper beside it, as npm start runs it (here in the bench's process)
    const shipper = await startRequestShipper({
      knex,
      databaseUrl,
      dataDir,
      secrets,
      outbound: { outboundAllowedHosts: ['127.0.0.1'] },
    });
    await load('warm-up', url, {}, 2);
    const before = collected;
    const shipped = await load('edge, request log shipped over http', url, {});
    const during = collected - before;
    // until the collector has everything (the lines still queued when the load stopped)
    for (let last = -1; last !== collected; ) {
      last = collected;
      await new Promise((r) => setTimeout(r, 1500));
    }
    await edge.close();
    await shipper.close();
    const ratio = shipped.requestsPerSecond / without.requestsPerSecond;
    printTable('A small GET through the edge: without and with the request log shipped', [
      {
        case: without.name,
        'req/s': Math.round(without.requestsPerSecond),
        'p50 ms': without.p50,
        'p99 ms': without.p99,
        errors: without.errors + without.non2xx,
      },
      {
        case: shipped.name,
        'req/s': Math.round(shipped.requestsPerSecond),
        'p50 ms': shipped.p50,
        'p99 ms': shipped.p99,
        errors: shipped.errors + shipped.non2xx,
      },
    ]);
    console.log(
      `lines at the collector: ${during} during the measured run, ${collected - before} in all ` +
        `(about ${Math.round(shipped.requestsPerSecond * 8)} requests measured)`,
    );
    console.log(
      `throughput ratio with / without = ${ratio.toFixed(2)} (target >= 0.90): ${ratio >= 0.9 ? 'met' : 'NOT met'}`,
    );
    return { ratio };
  } finally {
    await new Promise((r) => app.close(r));
    await new Promise((r) => collector.close(r));
    await knex.destroy();
    await dropDatabase(ADMIN_DATABASE_URL, dbName);
    rmSync(dataDir, { recursive: true, force: true });
  }
}
