import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { join } from 'node:path';
import { createDatabase, dropDatabase, withDatabase } from '../db/database';
import { createKnex } from '../db/knex';
import { migrateLatest } from '../db/migrate';
import { freePort } from '../test/helpers/ports';
import { ADMIN_DATABASE_URL, load, printTable, type LoadResult } from './harness';
import { sized } from './quick';

/**
 * The edge against the app directly, same run, each its own process as in production (the load generator
 * in this one):
 * 1. a small GET through the edge with every project rule on (blocked addresses and user agents, a rate
 *    limit set high, HSTS; compression off) and an allow list on the environment. Targets: the edge keeps
 *    at least 80% of the direct throughput and adds under 1 ms at p50.
 * 2. a page the app takes ~5 ms to answer (a query, then rendering), marked `public`: CDN HITs through the
 *    edge against the app's own answers. Target: at least 3x the throughput.
 * The edge needs only PostgreSQL (no Temporal, no worker), so this bench starts just a database.
 */
function start(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve(m.port));
    child.once('exit', (code) => reject(new Error(`a bench process exited (${code})`)));
  });
}

/** Latency of one client sending requests one after another on a kept-alive connection, to 0.01 ms. */
async function latency(url: string, requests = sized(3000, 100)): Promise<{ p50: number; p99: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const times: number[] = [];
  for (let i = 0; i < requests; i++) {
    const began = process.hrtime.bigint();
    await new Promise<void>((resolve, reject) => {
      http
        .get(url, { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve());
        })
        .on('error', reject);
    });
    times.push(Number(process.hrtime.bigint() - began) / 1e6);
  }
  agent.destroy();
  times.sort((a, b) => a - b);
  const at = (q: number) => Math.round(times[Math.min(times.length - 1, Math.floor(q * times.length))] * 100) / 100;
  return { p50: at(0.5), p99: at(0.99) };
}

/**
 * Two cases measured in alternation (ROUNDS rounds of `seconds` each), so that the load of a shared host
 * weighs on both alike: each case's rounds summed, and the median of the rounds' ratios b / a.
 */
const ROUNDS = sized(4, 1);

/** CPU time (user + system, microseconds) a bench process has used so far. */
function cpuOf(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    const on = (m: { cpu?: NodeJS.CpuUsage }) => {
      if (!m.cpu) return;
      child.off('message', on);
      resolve(m.cpu.user + m.cpu.system);
    };
    child.on('message', on);
    child.send('cpu');
  });
}

/** CPU microseconds per request of each process while `run` loads them. */
async function cpuPerRequest(
  procs: Record<string, ChildProcess>,
  run: () => Promise<LoadResult>,
  cpu: Record<string, { us: number; requests: number }>,
): Promise<LoadResult> {
  const before = await Promise.all(Object.values(procs).map(cpuOf));
  const r = await run();
  const after = await Promise.all(Object.values(procs).map(cpuOf));
  for (const [i, name] of Object.keys(procs).entries()) {
    cpu[name] ??= { us: 0, requests: 0 };
    cpu[name].us += after[i] - before[i];
    cpu[name].requests += r.total;
  }
  return r;
}

async function alternate(
  a: { name: string; url: string; procs: Record<string, ChildProcess> },
  b: { name: string; url: string; procs: Record<string, ChildProcess> },
  seconds = 3,
): Promise<{ a: LoadResult; b: LoadResult; ratio: number; cpu: [Record<string, number>, Record<string, number>] }> {
  const runs: Array<[LoadResult, LoadResult]> = [];
  const cpuA: Record<string, { us: number; requests: number }> = {};
  const cpuB: Record<string, { us: number; requests: number }> = {};
  for (let i = 0; i < ROUNDS; i++)
    runs.push([
      await cpuPerRequest(a.procs, () => load(a.name, a.url, {}, seconds), cpuA),
      await cpuPerRequest(b.procs, () => load(b.name, b.url, {}, seconds), cpuB),
    ]);
  const perRequest = (c: Record<string, { us: number; requests: number }>) =>
    Object.fromEntries(Object.entries(c).map(([k, v]) => [k, Math.round((v.us / Math.max(1, v.requests)) * 10) / 10]));
  const sum = (k: 0 | 1, name: string): LoadResult => {
    const rs = runs.map((r) => r[k]);
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
    return {
      name,
      requestsPerSecond: rs.reduce((n, r) => n + r.requestsPerSecond, 0) / rs.length,
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      errors: rs.reduce((n, r) => n + r.errors, 0),
      non2xx: rs.reduce((n, r) => n + r.non2xx, 0),
      total: rs.reduce((n, r) => n + r.total, 0),
    };
  };
  const ratios = runs.map(([x, y]) => y.requestsPerSecond / x.requestsPerSecond).sort((x, y) => x - y);
  console.log(
    `  ratios by round: ${runs.map(([x, y]) => (y.requestsPerSecond / x.requestsPerSecond).toFixed(2)).join(', ')}`,
  );
  return {
    a: sum(0, a.name),
    b: sum(1, b.name),
    ratio: ratios[Math.floor(ratios.length / 2)],
    cpu: [perRequest(cpuA), perRequest(cpuB)],
  };
}

function row(r: LoadResult) {
  return {
    case: r.name,
    'req/s': Math.round(r.requestsPerSecond),
    'p50 ms': r.p50,
    'p99 ms': r.p99,
    errors: r.errors + r.non2xx,
  };
}

export async function run(): Promise<{ ratio: number; cdnRatio: number }> {
  console.log('[bench] edge: starting a database, an app and the edge...');
  const dbName = `vc_bench_edge_${process.pid}`;
  await dropDatabase(ADMIN_DATABASE_URL, dbName);
  await createDatabase(ADMIN_DATABASE_URL, dbName);
  const databaseUrl = withDatabase(ADMIN_DATABASE_URL, dbName);
  const knex = createKnex(databaseUrl);
  await migrateLatest(knex);

  const children: ChildProcess[] = [];
  try {
    const app = fork(join(import.meta.dirname, 'edge', 'app.cjs'), [], { stdio: 'inherit' });
    children.push(app);
    const appPort = await start(app);

    const [team] = await knex('teams').insert({ name: 'Bench', settings: {} }).returning('id');
    const [project] = await knex('projects').insert({ team_id: team.id, name: 'bench' }).returning('id');
    const envPort = await freePort();
    const cdnPort = await freePort();
    const [env, cdnEnv] = await knex('environments')
      .insert([
        { team_id: team.id, project_id: project.id, name: 'production', git_ref: 'main', port: envPort },
        { team_id: team.id, project_id: project.id, name: 'cdn', git_ref: 'main', port: cdnPort },
      ])
      .returning('id');
    for (const e of [env, cdnEnv])
      await knex('edge_routes').insert({ environment_id: e.id, upstream_host: '127.0.0.1', upstream_port: appPort });
    await knex('environment_edges').insert({
      environment_id: env.id,
      allowed_addresses: JSON.stringify(['127.0.0.0/8', '::1/128']),
    });
    await knex('environment_cdns').insert({ environment_id: cdnEnv.id, enabled: true, default_ttl_seconds: 600 });
    await knex('project_edges').insert({
      project_id: project.id,
      blocked_addresses: JSON.stringify(['10.0.0.0/8', '192.0.2.0/24', '2001:db8::/32']),
      blocked_user_agents: JSON.stringify(['evilbot', 'scrapy', 'masscan']),
      rate_limit: JSON.stringify({ requests: 100_000_000, per_seconds: 60 }),
      hsts: JSON.stringify({ max_age: 31536000, include_subdomains: true, preload: false }),
      compression: false,
    });
    const edge = fork(join(import.meta.dirname, 'edge', 'edge-process.ts'), [], {
      stdio: 'inherit',
      execArgv: [
        '--import',
        'tsx',
        ...(process.env.BENCH_EDGE_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_EDGE_PROF}`] : []),
      ],
      env: { ...process.env, DATABASE_URL: databaseUrl },
    });
    children.push(edge);
    await start(edge);

    const check = await fetch(`http://127.0.0.1:${envPort}/`);
    if (check.status !== 200) throw new Error(`the edge answered ${check.status}`);
    const hit = await fetch(`http://127.0.0.1:${cdnPort}/page`).then(() => fetch(`http://127.0.0.1:${cdnPort}/page`));
    if (hit.headers.get('x-cache') !== 'HIT') throw new Error(`the CDN answered ${hit.headers.get('x-cache')}`);

    console.log('[bench] edge: warming up...');
    await load('warm-up', `http://127.0.0.1:${appPort}/`, {}, 2);
    await load('warm-up', `http://127.0.0.1:${envPort}/`, {}, 2);
    console.log(
      `[bench] edge: the app directly and through the edge, in turn (${ROUNDS} x 3 s each, 10 connections)...`,
    );
    const small = await alternate(
      { name: 'app directly', url: `http://127.0.0.1:${appPort}/`, procs: { app } },
      { name: 'through the edge, all rules on', url: `http://127.0.0.1:${envPort}/`, procs: { app, edge } },
    );
    const { a: direct, b: through, ratio } = small;
    printTable('A small GET: the app directly vs through the edge', [row(direct), row(through)]);
    console.log('[bench] edge: latency of one client, one request after another (3000 each)...');
    const alone = await latency(`http://127.0.0.1:${appPort}/`);
    const edged = await latency(`http://127.0.0.1:${envPort}/`);
    printTable('A small GET, one client: latency', [
      { case: 'app directly', 'p50 ms': alone.p50, 'p99 ms': alone.p99 },
      { case: 'through the edge, all rules on', 'p50 ms': edged.p50, 'p99 ms': edged.p99 },
    ]);
    const [cpuDirect, cpuEdge] = small.cpu;
    console.log(
      `CPU per request (microseconds): app directly ${cpuDirect.app}; through the edge: app ${cpuEdge.app} + edge ${cpuEdge.edge}` +
        ` -> on a CPU-bound host the edge keeps ${(cpuDirect.app / (cpuEdge.app + cpuEdge.edge)).toFixed(2)} of the throughput` +
        ' (the load generator left out)',
    );
    const added = edged.p50 - alone.p50;
    console.log(
      `throughput ratio edge / direct (median of rounds) = ${ratio.toFixed(2)} (target >= 0.80): ${ratio >= 0.8 ? 'met' : 'NOT met'}`,
    );
    console.log(`p50 added by the edge = ${added.toFixed(2)} ms (target < 1 ms): ${added < 1 ? 'met' : 'NOT met'}`);

    console.log(
      `[bench] edge: a cacheable page from the app and CDN HITs through the edge, in turn (${ROUNDS} x 3 s)...`,
    );
    const cached = await alternate(
      { name: "the app's own answer", url: `http://127.0.0.1:${appPort}/page`, procs: { app } },
      { name: 'CDN HIT through the edge', url: `http://127.0.0.1:${cdnPort}/page`, procs: { app, edge } },
    );
    const { a: page, b: hits, ratio: cdnRatio } = cached;
    console.log(
      `CPU per request (microseconds): the app's page ${cached.cpu[0].app}; a CDN HIT: edge ${cached.cpu[1].edge}, app ${cached.cpu[1].app}`,
    );
    printTable('A cacheable page (~20 KB, ~5 ms in the app): the app vs CDN HITs', [row(page), row(hits)]);
    console.log(
      `throughput ratio CDN HIT / app (median of rounds) = ${cdnRatio.toFixed(2)} (target >= 3): ${cdnRatio >= 3 ? 'met' : 'NOT met'}`,
    );
    return { ratio, cdnRatio };
  } finally {
    for (const c of children.reverse()) {
      if (c.exitCode !== null) continue;
      const gone = new Promise((r) => c.once('exit', r));
      c.kill('SIGTERM');
      await gone;
    }
    await knex.destroy();
    await dropDatabase(ADMIN_DATABASE_URL, dbName);
  }
}
