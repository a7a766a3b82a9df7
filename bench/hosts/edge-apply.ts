/**
 * The edge with 1,000 backends (issue 26, `npm run bench -- hosts` (c)): an edge control plane and its HAProxy
 * for a range of BACKENDS ports (1,000; 50 with --quick), a backend each with SCALE_MAX server slots, every port
 * an environment's. Routes are published as the supervisor publishes them (db/queries/edge-routes.ts) and the
 * time is taken from the commit until every edge serves the change, by the wait a deploy makes (awaitEdges):
 *  - the edge's start: haproxy.cfg of BACKENDS backends written, HAProxy started, the first state applied;
 *  - all BACKENDS routes published in one transaction (HAProxy's runtime API: `set server` addr and state);
 *  - one route changed among BACKENDS, ONE_CHANGES times (p50, p99): what a deploy's edge switch waits;
 *  - every route moved at once;
 *  - HAProxy's memory (PSS) with the BACKENDS routes, and per backend.
 * The servers named are checked in HAProxy (`show servers state`), so the time is that of a real apply.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { percentile as pct, printTable, type BenchSystem } from '../harness';
import { startEdge, type EdgeOptions } from '../../edge/server';
import { haproxyPaths } from '../../edge/haproxy/paths';
import { runtimeCommand } from '../../edge/runtime-command';
import { awaitEdges, publishEdgeRoute } from '../../db/queries/edge-routes';
import { processTree, sum } from './memory';
import { sized } from '../quick';

const BACKENDS = sized(1000, 50);
const ONE_CHANGES = sized(20, 3);
/** Where the published upstreams point (nothing listens: the apply is what is measured, not the traffic). */
const UPSTREAM_PORTS = 37000;

const now = () => performance.now();
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;

const route = (port: number) => ({
  kind: 'upstream' as const,
  host: '127.0.0.1',
  port,
  releaseId: '00000000-0000-4000-8000-000000000001',
  upstreams: [{ id: '1', host: '127.0.0.1', port }],
});

/** Publishes `routes` in one transaction, then waits as a deploy does until every edge serves them (ms). */
async function publishAndWait(knex: Knex, routes: Array<[string, number]>): Promise<number> {
  const t0 = now();
  await knex.transaction(async (trx) => {
    for (const [envId, port] of routes) await publishEdgeRoute(trx, envId, route(port));
  });
  const committed = now();
  const behind = await awaitEdges(knex, 60_000);
  if (behind.length) throw new Error('the edge did not apply the routes within 60 s');
  const t = now() - committed;
  if (routes.length > 1)
    console.log(`[bench] hosts: (c) ${routes.length} routes written in ${Math.round(committed - t0)} ms`);
  return t;
}

/** Servers of HAProxy's `show servers state` that serve `host` (addr set, not in maintenance). */
async function servingServers(socket: string, host: string): Promise<Set<string>> {
  const out = await runtimeCommand(socket, 'show servers state', { timeoutMs: 30_000 });
  const serving = new Set<string>();
  for (const line of out.split('\n')) {
    const f = line.trim().split(/\s+/);
    // be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state ... srv_port (field 18)
    if (f.length < 19 || f[4] !== host || (Number(f[6]) & 1) !== 0) continue;
    serving.add(`${f[1]}:${f[18]}`);
  }
  return serving;
}

export async function benchEdgeApply(
  sys: BenchSystem,
  o: { portsFrom: number; edgeOptions: Omit<EdgeOptions, 'dataDir' | 'environmentPorts'> },
): Promise<void> {
  const { knex } = sys.deps;
  const ports = { from: o.portsFrom, to: o.portsFrom + BACKENDS - 1 };
  const envs: Array<{ id: string; port: number }> = await knex('environments')
    .whereBetween('port', [ports.from, ports.to])
    .orderBy('port')
    .select('id', 'port');
  if (envs.length !== BACKENDS)
    throw new Error(`${envs.length} environments in ${ports.from}-${ports.to}, not ${BACKENDS}`);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'vc-bench-edge-'));
  console.log(`[bench] hosts: (c) the edge with ${BACKENDS} backends (${ports.from}-${ports.to})...`);
  let t0 = now();
  const edge = await startEdge({ ...o.edgeOptions, dataDir, environmentPorts: ports });
  const startMs = now() - t0;
  const admin = haproxyPaths(dataDir).admin;
  try {
    const pssEmpty = sum(processTree(edge.haproxyPid()!), 'pssKb');
    const allMs = await publishAndWait(
      knex,
      envs.map((e, i) => [e.id, UPSTREAM_PORTS + i]),
    );
    let serving = await servingServers(admin, '127.0.0.1');
    if (serving.size < BACKENDS) throw new Error(`HAProxy serves ${serving.size} of ${BACKENDS} routes`);
    const one: number[] = [];
    for (let i = 0; i < ONE_CHANGES; i++) {
      const j = (i * 37) % BACKENDS;
      one.push(await publishAndWait(knex, [[envs[j].id, UPSTREAM_PORTS + BACKENDS + i]]));
    }
    t0 = now();
    const movedMs = await publishAndWait(
      knex,
      envs.map((e, i) => [e.id, UPSTREAM_PORTS + 2 * BACKENDS + i]),
    );
    serving = await servingServers(admin, '127.0.0.1');
    const moved = [...serving].filter((s) => Number(s.split(':')[1]) >= UPSTREAM_PORTS + 2 * BACKENDS).length;
    if (moved < BACKENDS) throw new Error(`HAProxy serves ${moved} of ${BACKENDS} moved routes`);
    await new Promise((r) => setTimeout(r, 1000));
    const pssFull = sum(processTree(edge.haproxyPid()!), 'pssKb');
    const slots = o.edgeOptions.scaleMax ?? 4;
    printTable(`Many hosts (c): the edge with ${BACKENDS} backends (${slots} server slots each)`, [
      { case: '(c) edge start: config, HAProxy, first state', n: 1, 'p50 ms': Math.round(startMs), 'p99 ms': '' },
      {
        case: `(c) all ${BACKENDS} routes published in one transaction -> served`,
        n: 1,
        'p50 ms': Math.round(allMs),
        'p99 ms': '',
      },
      {
        case: `(c) one route changed among ${BACKENDS} -> served (a deploy's wait)`,
        n: one.length,
        'p50 ms': round(pct(one, 0.5)),
        'p99 ms': round(pct(one, 0.99)),
      },
      { case: `(c) all ${BACKENDS} routes moved at once -> served`, n: 1, 'p50 ms': Math.round(movedMs), 'p99 ms': '' },
      {
        case: `(c) HAProxy PSS: ${round(pssEmpty / 1024)} MB empty, ${round(pssFull / 1024)} MB with routes`,
        n: BACKENDS,
        'p50 ms': `${round(pssFull / BACKENDS, 1)} KB/backend (${round((pssFull - pssEmpty) / BACKENDS, 1)} for its route)`,
        'p99 ms': '',
      },
    ]);
  } finally {
    await edge.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
