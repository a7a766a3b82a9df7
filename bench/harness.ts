import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { createDatabase, dropDatabase, withDatabase } from '../db/database';
import { createKnex } from '../db/knex';
import { migrateLatest } from '../db/migrate';
import { loadConfig } from '../system/config';
import type { Deps } from '../system/deps';
import { createDeps } from '../processes/deps';
import { startApiServer } from '../processes/api-server';
import { nodeArgs, processBundles } from '../processes/process-bundles';
import { startTemporalDevServer, type DevServer } from '../processes/temporal';
import { spawn } from 'node:child_process';
import { User } from '../db/models/user';
import { Team } from '../db/models/team';
import { Membership } from '../db/models/membership';
import { Project } from '../db/models/project';
import { AccessToken } from '../db/models/access-token';
import { generateSecret, tokenDigest } from '../api/lib/token-format';
import { freePort } from '../test/helpers/ports';
// @ts-expect-error plain JS module shared with scripts/bootstrap.mjs
import { ensureTemporalCli } from '../scripts/temporal-cli.mjs';
import { removeNetworksInRange } from '../host/provider/sandbox';
import { sized } from './quick';

export const ADMIN_DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface BenchSystem {
  deps: Deps;
  server: Server;
  apiUrl: string;
  dataDir: string;
  temporal: DevServer;
  close(): Promise<void>;
}

/** A whole system for one benchmark: its own Temporal dev server, database, deps and API server. */
export async function startBenchSystem(name: string, env: Record<string, string> = {}): Promise<BenchSystem> {
  const dataDir = mkdtempSync(join(tmpdir(), `vc-bench-${name}-`));
  const temporal = await startTemporalDevServer({
    cliPath: ensureTemporalCli(),
    dataDir,
    port: await freePort(),
    namespace: 'default',
    headless: true,
  });
  const dbName = `vc_bench_${name}_${process.pid}`;
  await dropDatabase(ADMIN_DATABASE_URL, dbName);
  await createDatabase(ADMIN_DATABASE_URL, dbName);
  const databaseUrl = withDatabase(ADMIN_DATABASE_URL, dbName);
  const knex = createKnex(databaseUrl);
  await migrateLatest(knex);
  await knex.destroy();
  const config = loadConfig({
    PORT: '0',
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: `bench-${name}`,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_PER_MINUTE: '100000000',
    ...env,
  });
  const deps = await createDeps(config, { name: 'bench', credentialCache: true });
  const server = await startApiServer(deps, 0, '127.0.0.1');
  const port = (server.address() as { port: number }).port;
  deps.config.baseUrl = `http://127.0.0.1:${port}`;
  return {
    deps,
    server,
    apiUrl: `http://127.0.0.1:${port}/api/vc/v1`,
    dataDir,
    temporal,
    async close() {
      // Let requests still in flight (a load generator's last ones) finish before the pool closes.
      await new Promise((r) => server.close(r));
      await deps.close();
      await temporal.stop();
      await dropDatabase(ADMIN_DATABASE_URL, dbName).catch(() => undefined);
      await removeNetworksInRange(config.environmentPorts.from, config.environmentPorts.to);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface LoadResult {
  name: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** Requests answered in all. */
  total: number;
}

/** Runs autocannon against one URL and returns throughput and latency. */
export async function load(
  name: string,
  url: string,
  headers: Record<string, string>,
  seconds = 8,
  connections = 10,
): Promise<LoadResult> {
  const result = await autocannon({ url, headers, duration: sized(seconds, 1), connections, pipelining: 1 });
  return {
    name,
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
    total: result.requests.total,
  };
}

/** The nearest-rank percentile `q` (0-1) of `values`. */
export function percentile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** The median of `values` (the nearest-rank 50th percentile): every bench takes its medians so. */
export const median = (values: number[]) => percentile(values, 0.5);

export function printTable(title: string, rows: Array<Record<string, string | number>>) {
  console.log(`\n${title}`);
  console.table(rows);
}

/**
 * The API as its own process (`processes/api.ts`), as in production, on the bench system's database,
 * Temporal server and data directory (so it shares the token key).
 */
export async function spawnApiProcess(sys: BenchSystem): Promise<{ apiUrl: string; stop(): Promise<void> }> {
  const port = await freePort();
  const c = sys.deps.config;
  // as npm start runs it: its bundle (processes/process-bundles.ts)
  const root = join(import.meta.dirname ?? '.', '..');
  const child = spawn(process.execPath, nodeArgs(root, 'processes/api.ts', await processBundles(root)), {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: c.databaseUrl,
      TEMPORAL_ADDRESS: c.temporalAddress,
      TEMPORAL_TASK_QUEUE: c.taskQueue,
      DATA_DIR: c.dataDir,
      LOG_LEVEL: 'silent',
      RATE_LIMIT_PER_MINUTE: String(c.rateLimit.perMinute),
    },
  });
  const apiUrl = `http://127.0.0.1:${port}/api/vc/v1`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ok = await fetch(`${apiUrl}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (child.exitCode !== null || Date.now() > deadline) throw new Error('the API process did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    apiUrl,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/**
 * What each benchmark measures against: a developer with a personal access token (the string is
 * returned) in a team with one project, connected to `repositoryUrl` when given.
 */
export async function seedDeveloperWithToken(sys: BenchSystem, repositoryUrl: string | null = null) {
  const { knex, secrets } = sys.deps;
  const user = await User.query(knex).insertAndFetch({
    email: 'bench@example.test',
    name: 'Bench',
    password_hash: 'x',
    email_confirmed_at: new Date(),
  });
  const team = await Team.query(knex).insertAndFetch({ name: 'Bench', settings: {} });
  await Membership.query(knex).insert({ team_id: team.id, user_id: user.id, role: 'developer' });
  const project = await Project.query(knex).insertAndFetch({
    team_id: team.id,
    name: 'bench',
    repository_url: repositoryUrl,
  });
  const token = generateSecret('vcp_');
  await AccessToken.query(knex).insert({
    user_id: user.id,
    team_id: team.id,
    purpose: 'bench',
    digest: tokenDigest(token, secrets.tokenKey.key),
    key_id: secrets.tokenKey.id,
    expires_in_days: 7,
    expires_at: new Date(Date.now() + 7 * 86_400_000),
  });
  return { user, team, project, token };
}
