/**
 * The edge benches' world (bench/edge.ts, bench/edge/variants.ts): a database of its own, the app
 * (bench/edge/app.cjs) and the edge's control plane (bench/edge/edge-process.ts, which starts HAProxy), each its
 * own process. One project with every rule on: allowed addresses, blocked addresses and agents, a rate limit
 * set high, HSTS, stickiness, and its request log shipped; a second environment with the CDN on. `acme`: the edge
 * answers HTTP-01 on Pebble's port and serves HTTPS (bench/edge/https.ts); without it the edge takes free ports.
 * The request log's destination is an http collector (NDJSON batches) or a syslog udp receiver, both in a process
 * of their own (bench/edge/collector.cjs), switched with `useDestination`.
 */
import { type ChildProcess, fork } from 'node:child_process';
import net from 'node:net';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Knex } from 'knex';
import { createDatabase, dropDatabase, withDatabase } from '../../db/database';
import { createKnex } from '../../db/knex';
import { destinationColumns } from '../../db/queries/log-settings';
import { migrateLatest } from '../../db/migrate';
import { stopLeftVarnish } from '../../edge/cdn/pids';
import { haproxyPaths } from '../../edge/haproxy/paths';
import { requestLogPaths } from '../../edge/request-log/control';
import { stopLeftDataPlane } from '../../edge/haproxy/process';
import { loadSecrets, type Secrets } from '../../system/secrets';
import { freePortRange } from '../../test/helpers/ports';
import { ADMIN_DATABASE_URL } from '../harness';
import { type AcmeWorld, startAcmeWorld } from './https';

/** What the collector process got so far: http lines and bytes, udp datagrams and bytes. */
interface Received {
  http: number;
  httpBytes: number;
  udp: number;
  udpBytes: number;
}

interface EdgeWorld {
  knex: Knex;
  dataDir: string;
  secrets: Secrets;
  acme: AcmeWorld | null;
  app: ChildProcess;
  appPort: number;
  /** The edge's control plane (HAProxy is its child). */
  edge: ChildProcess;
  /** The request log's shipper (processes/shipper.ts), its own process as under npm start. */
  shipper: ChildProcess;
  envPort: number;
  cdnPort: number;
  ids: { teamId: string; projectId: string; environmentId: string };
  /** Request lines the project's current destination (http collector or syslog receiver) got so far. */
  shipped(): Promise<number>;
  received(): Promise<Received>;
  /** The collector's ports (the floors of bench/edge/floors.ts send there). */
  collector: { httpPort: number; udpPort: number; pid: number };
  /** Makes the project's destination the http collector or the syslog udp receiver (the shipper reads it at once). */
  useDestination(kind: 'http' | 'udp'): Promise<void>;
  /** Stops the edge's control plane (and HAProxy with it) and the shipper; their files stay under dataDir. */
  stopEdge(): Promise<void>;
  /** Stops everything, drops the database and removes dataDir. */
  close(): Promise<void>;
}

/** Resolves once the unix socket takes connections (the shipper's, which sends no message). */
async function untilListening(path: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`the shipper exited (${child.exitCode})`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ path });
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the shipper did not listen within 60 s');
}

/** Resolves with the port a bench child sends once ready. */
function started(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve(m.port));
    child.once('exit', (code) => reject(new Error(`a bench process exited (${code})`)));
  });
}

async function stop(c: ChildProcess): Promise<void> {
  if (c.exitCode !== null || c.signalCode !== null) return;
  const gone = new Promise((r) => c.once('exit', r));
  c.kill('SIGTERM');
  await gone;
}

export async function startEdgeWorld(name: string, o: { acme: boolean }): Promise<EdgeWorld> {
  const dbName = `vc_bench_${name}_${process.pid}`;
  await dropDatabase(ADMIN_DATABASE_URL, dbName);
  await createDatabase(ADMIN_DATABASE_URL, dbName);
  const databaseUrl = withDatabase(ADMIN_DATABASE_URL, dbName);
  const knex = createKnex(databaseUrl);
  const dataDir = mkdtempSync(join(tmpdir(), `vc-bench-${name}-`));
  chmodSync(dataDir, 0o711); // Varnish's jail user reaches its directory (docs/cdn.md)
  const children: ChildProcess[] = [];
  const closers: Array<() => unknown> = [];
  const close = async () => {
    for (const c of closers) await c();
    for (const c of children.reverse()) await stop(c);
    // nothing of the bench's edge stays running: an HAProxy or a Varnish its control plane left (as npm start's
    // stop does; one left by a quick run once spun a core for the next 20 minutes)
    const leftHaproxy = await stopLeftDataPlane(haproxyPaths(dataDir)).catch(() => false);
    const leftVarnish = await stopLeftVarnish(join(dataDir, 'edge', 'varnish')).catch(() => false);
    if (leftHaproxy || leftVarnish)
      console.log(
        `[bench] ${name}: stopped what the edge left running (${leftHaproxy ? 'HAProxy' : ''}${leftHaproxy && leftVarnish ? ', ' : ''}${leftVarnish ? 'Varnish' : ''})`,
      );
    await knex.destroy();
    await dropDatabase(ADMIN_DATABASE_URL, dbName);
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await migrateLatest(knex);
    const acme = o.acme ? await startAcmeWorld(dataDir) : null;
    if (acme) closers.push(() => acme.close());
    const secrets = loadSecrets(dataDir); // made here, before the edge process reads the same files
    const app = fork(join(import.meta.dirname, 'app.cjs'), [], { stdio: 'inherit' });
    children.push(app);
    const appPort = await started(app);

    const [team] = await knex('teams').insert({ name: 'Bench', settings: {} }).returning('id');
    const [project] = await knex('projects').insert({ team_id: team.id, name: 'bench' }).returning('id');
    // the edge binds ENVIRONMENT_PORTS whole: these two ports
    const ports = await freePortRange(2);
    const [envPort, cdnPort] = [ports.from, ports.to];
    const [env, cdnEnv] = await knex('environments')
      .insert([
        { team_id: team.id, project_id: project.id, name: 'production', git_ref: 'main', port: envPort },
        { team_id: team.id, project_id: project.id, name: 'cdn', git_ref: 'main', port: cdnPort },
      ])
      .returning('id');
    const upstreams = JSON.stringify([{ id: '1', host: '127.0.0.1', port: appPort }]);
    for (const e of [env, cdnEnv])
      await knex('edge_routes').insert({
        environment_id: e.id,
        upstream_host: '127.0.0.1',
        upstream_port: appPort,
        upstreams,
      });
    await knex('environment_edges').insert({
      environment_id: env.id,
      allowed_addresses: JSON.stringify(['127.0.0.0/8', '::1/128']),
      stickiness: true,
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
    // Every rule on AND the request log shipped: to an http collector (or a syslog udp receiver), its own process.
    const collectorProcess = fork(join(import.meta.dirname, 'collector.cjs'), [], { stdio: 'inherit' });
    children.push(collectorProcess);
    const listening = await new Promise<{ httpPort: number; udpPort: number }>((resolve, reject) => {
      collectorProcess.once('message', (m: { httpPort: number; udpPort: number }) => resolve(m));
      collectorProcess.once('exit', (code) => reject(new Error(`the collector exited (${code})`)));
    });
    const collector = { ...listening, pid: collectorProcess.pid! };
    const received = () =>
      new Promise<Received>((resolve) => {
        const answer = (m: { counts?: Received }) => {
          if (!m.counts) return;
          collectorProcess.off('message', answer);
          resolve(m.counts);
        };
        collectorProcess.on('message', answer);
        collectorProcess.send('counts');
      });
    let kind: 'http' | 'udp' = 'http';
    const destination = (k: 'http' | 'udp') =>
      destinationColumns(
        secrets,
        project.id,
        k === 'http'
          ? { kind: 'http', name: 'bench collector', url: `http://127.0.0.1:${collector.httpPort}/ingest` }
          : { kind: 'syslog', name: 'bench receiver', host: '127.0.0.1', port: collector.udpPort, protocol: 'udp' },
      );
    await knex('project_log_settings').insert({ project_id: project.id, ...destination(kind), can_send: true });
    // The request log's shipper, as npm start runs it (processes/shipper.ts): HAProxy's ring forwards to it.
    // BENCH_SHIPPER_PROF=<dir>: the shipper writes a CPU profile there when it stops (node --cpu-prof)
    const prof = process.env.BENCH_SHIPPER_PROF;
    const shipper = fork(join(import.meta.dirname, '..', '..', 'processes', 'shipper.ts'), [], {
      stdio: 'inherit',
      execArgv: ['--import', 'tsx', ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [])],
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        DATA_DIR: dataDir,
        LOG_LEVEL: process.env.BENCH_DEBUG ? 'info' : 'warn',
        OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
      },
    });
    children.push(shipper);
    await untilListening(requestLogPaths(dataDir).socket, shipper);
    const edge = fork(join(import.meta.dirname, 'edge-process.ts'), [], {
      stdio: 'inherit',
      execArgv: ['--import', 'tsx'],
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        DATA_DIR: dataDir,
        ENVIRONMENT_PORTS: `${ports.from}-${ports.to}`,
        // every client of the bench is on loopback: wrk's connections and the TLS handshakes (hundreds of new
        // connections in seconds) from one address. The concurrent limit stays at its default (100): the
        // slowloris case measures another address's p99 under it.
        EDGE_CONNECTION_RATE_PER_ADDRESS: '1000000',
        ...(acme ? { EDGE_PORT: String(acme.edgePort), EDGE_TLS_PORT: String(acme.tlsPort) } : {}),
      },
    });
    children.push(edge);
    await started(edge);
    return {
      knex,
      dataDir,
      secrets,
      acme,
      app,
      appPort,
      edge,
      shipper,
      envPort,
      cdnPort,
      ids: { teamId: team.id, projectId: project.id, environmentId: env.id },
      shipped: async () => (await received())[kind],
      received,
      collector,
      useDestination: async (k) => {
        kind = k;
        // project_log_settings notifies vc_edge: the shipper reads it at once (and every second)
        await knex('project_log_settings').where({ project_id: project.id }).update(destination(k));
        await new Promise((r) => setTimeout(r, 1500));
      },
      stopEdge: async () => {
        await stop(edge);
        await stop(shipper);
        // the edge process's stop has been seen to leave its HAProxy running (see close() below): its ports must
        // be free for what runs next (HAProxy binds with noreuseport)
        await stopLeftDataPlane(haproxyPaths(dataDir)).catch(() => false);
      },
      close,
    };
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
}
