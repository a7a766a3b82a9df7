import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, inject } from 'vitest';
import { createDatabase, dropDatabase, withDatabase } from '../../db/database';
import { loadConfig, type Config } from '../../system/config';
import type { Deps } from '../../system/deps';
import { createDeps } from '../../processes/deps';
import { startApiServer } from '../../processes/api-server';
import type { RunningWorker } from '../../processes/worker-runtime';
import { startSmtpServer } from './smtp';
import { Agent } from './http';
import { killProcessesUnder, killTenantsOfPorts } from './processes';
import { settingUp, tornDown } from './torn-down';
import type { Edge } from '../../edge/server';
import type { RequestShipper } from '../../processes/shipper-runtime';
import { registerHost } from '../../core/host-registration';
import { TEST_WORKERS, workerPortRanges } from './test-workers';

export interface TestContext {
  deps: Deps;
  config: Config;
  /** http://127.0.0.1:PORT */
  baseUrl: string;
  /** baseUrl + /api/vc/v1 */
  apiUrl: string;
  server: Server;
  worker?: RunningWorker;
  /** The edge, serving the environments' ports and (on edge.port) verified domains by Host. */
  edge?: Edge;
  /** The request log's shipper beside the edge (processes/shipper-runtime.ts, as npm start's shipper process). */
  shipper?: RequestShipper;
  smtp?: Awaited<ReturnType<typeof startSmtpServer>>;
  databaseUrl: string;
  dataDir: string;
  /** A new client with its own cookie jar. */
  agent(): Agent;
}

interface TestContextOptions {
  /** Run a Temporal worker in this process on the file's own task queue. */
  worker?: boolean;
  /** Run the edge in this process (default: with a worker). */
  edge?: boolean;
  /** A real SMTP server on loopback; mail goes there. */
  smtp?: boolean;
  /** Environment overrides (as the process environment would give them). */
  env?: Record<string, string>;
  /**
   * Register the file's host (this machine's HOST_NAME) and heartbeat it while the file runs, as npm start's worker
   * does (default true): placement puts the file's environments there. false: the registry starts empty.
   */
  host?: boolean;
}

/**
 * Where tests create git repositories: a directory of the run outside every DATA_DIR, which the test
 * context lists in LOCAL_REPOSITORY_ROOTS (a repository under DATA_DIR is refused, as in production).
 */
export function repositoriesDir(): string {
  const dir = join(inject('runDir'), 'repos');
  mkdirSync(dir, { recursive: true });
  return dir;
}

let runtimeInstalled = false;

/**
 * The Temporal runtime of this test process logs warnings and errors, as npm start's worker does
 * (processes/worker.ts), not every worker's state changes at INFO (about 4,500 lines a run). Once per process: its
 * files share it (isolate: false). A runtime made already (by a file that made a connection first) is kept.
 */
async function quietTemporalRuntime(): Promise<void> {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const { DefaultLogger, Runtime } = await import('@temporalio/worker');
  try {
    Runtime.install({ logger: new DefaultLogger(process.env.TEST_LOG_LEVEL === 'debug' ? 'DEBUG' : 'WARN') });
  } catch {
    // installed already
  }
}

/**
 * Per test file: a database cloned from the migrated template, the API on an ephemeral port, and
 * optionally a worker (own task queue on the run's Temporal dev server) and an SMTP server.
 * Use in a describe/file body: `const t = useTestContext({ worker: true })`, then read t.* in tests.
 */
export function useTestContext(opts: TestContextOptions = {}): TestContext {
  const ctx = {} as TestContext;
  let host: Awaited<ReturnType<typeof registerHost>> | undefined;
  const dbName = `vc_t_${randomBytes(6).toString('hex')}`;
  beforeAll(async () => {
    const admin = inject('adminDatabaseUrl');
    await createDatabase(admin, dbName, inject('templateDatabase'));
    const dataDir = mkdtempSync(join(inject('runDir'), 'data-'));
    // as npm start's DATA_DIR: others may pass (HAProxy's workers, Varnish's cache, edge/privileges.ts)
    chmodSync(dataDir, 0o711);
    const smtp = opts.smtp ? await startSmtpServer() : undefined;
    // One range per vitest worker (VITEST_POOL_ID, test-workers.ts): files running at the same time never share a
    // range, so one file's teardown (which removes the networks of its range) never takes another file's.
    const pool = Number(process.env.VITEST_POOL_ID) || 1 + Math.floor(Math.random() * TEST_WORKERS);
    const ranges = workerPortRanges(pool);
    const config = loadConfig({
      PORT: '0',
      DATABASE_URL: withDatabase(admin, dbName),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: `test-${dbName}`,
      DATA_DIR: dataDir,
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      VC_CHECK_RESPONSES: '1',
      ENVIRONMENT_PORTS: `${ranges.environment.from}-${ranges.environment.to}`,
      INSTANCE_PORTS: `${ranges.instance.from}-${ranges.instance.to}`,
      LOCAL_REPOSITORY_ROOTS: repositoriesDir(),
      SANDBOX_SHARED_DIRS: join(inject('runDir'), 'shared'),
      SERVICES_DATABASE_URL: inject('servicesDatabaseUrl'),
      // every request of the tests comes from loopback, one address: the edge's per-address limits (docs/edge.md)
      // are proved where a test sets them, and through npm start with their defaults (edge-guard-start.test.ts)
      EDGE_CONNECTIONS_PER_ADDRESS: '10000',
      EDGE_CONNECTION_RATE_PER_ADDRESS: '1000000',
      // the file's one host (this machine's name), roomy: placement never refuses a test that does not ask it to
      HOST_CAPACITY: 'cpu=1000,memory_mb=10000000,disk_gb=1000000',
      ...(smtp ? { SMTP_URL: smtp.url } : {}),
      ...(opts.env ?? {}),
    });
    const deps = await createDeps(config, { name: 'test', credentialCache: true });
    // The file's host, registered and heartbeating while the file runs (as npm start's worker does): placement puts
    // every environment there, and a worker polls its queue.
    if (opts.host !== false)
      host = await registerHost(deps.knex, config, {
        onLostName: () => deps.logger.error('the test host lost its name'),
        onError: () => undefined,
        runsServices: true,
        encryptionKeyId: deps.secrets.encryptionKey.id,
      });
    const server = await startApiServer(deps, 0, '127.0.0.1');
    const port = (server.address() as { port: number }).port;
    const baseUrl = `http://127.0.0.1:${port}`;
    deps.config.baseUrl = baseUrl;
    // The worker, the edge and the sandboxes' modules load only in the files that run them: most files need none,
    // and each file's process imports what it names (about a second for a worker's).
    const edgeModules =
      (opts.edge ?? opts.worker)
        ? await Promise.all([import('../../edge/server'), import('../../edge/certificate-files')])
        : undefined;
    const edge = edgeModules
      ? await edgeModules[0].startEdge({
          knex: deps.knex,
          databaseUrl: config.databaseUrl!,
          host: '127.0.0.1',
          // EDGE_PORT in `env` (a port the test chose, e.g. for an ACME CA's HTTP-01); else any free port.
          edgePort: opts.env?.EDGE_PORT ? config.edgePort : 0,
          dataDir,
          environmentPorts: config.environmentPorts,
          scaleMax: config.scaleMax,
          secrets: deps.secrets,
          trustProxyHops: config.trustProxyHops,
          perAddress: config.edgePerAddress,
          threads: config.edgeThreads,
          refreshMs: 5000,
          logger: deps.logger,
          requestLog: true,
          certificateFiles: { dir: edgeModules[1].certificateDir(dataDir), secrets: deps.secrets },
          // HTTPS only where the test chose its port (EDGE_TLS_PORT in `env`)
          ...(opts.env?.EDGE_TLS_PORT
            ? { tls: { port: config.acme.tlsPort, publicPort: config.acme.tlsPublicPort } }
            : {}),
        })
      : undefined;
    // the request log's lines: the shipper beside the edge, as npm start runs it
    const shipper = edge
      ? await (await import('../../processes/shipper-runtime')).startRequestShipper({
          knex: deps.knex,
          databaseUrl: config.databaseUrl!,
          dataDir,
          secrets: deps.secrets,
          outbound: deps.config,
          logger: deps.logger,
          shipper: { refreshMs: 1000, maxBackoffMs: 4000 },
        })
      : undefined;
    if (opts.worker) await quietTemporalRuntime();
    const worker = opts.worker
      ? await (await import('../../processes/worker-runtime')).startWorker(deps, {
          workflowBundle: { code: readFileSync(inject('workflowBundlePath'), 'utf8') },
          hostName: config.hostName,
        })
      : undefined;
    Object.assign(ctx, {
      deps,
      config,
      baseUrl,
      apiUrl: `${baseUrl}/api/vc/v1`,
      server,
      worker,
      edge,
      shipper,
      smtp,
      databaseUrl: config.databaseUrl,
      dataDir,
      agent: () => new Agent(`${baseUrl}/api/vc/v1`),
    });
    // A file's own afterAll that throws makes vitest skip the teardown below: whatever it would have stopped (the
    // edge's HAProxy and Varnish, a worker's children) is stopped before the next file or when the process exits
    settingUp(dataDir);
  });
  afterAll(async () => {
    host?.stop();
    await ctx.worker?.shutdown().catch(() => undefined);
    await ctx.edge?.close().catch(() => undefined);
    await ctx.shipper?.close().catch(() => undefined);
    if (ctx.server) {
      ctx.server.closeAllConnections();
      await new Promise((r) => ctx.server.close(r));
    }
    await ctx.deps?.close().catch(() => undefined);
    await ctx.smtp?.stop();
    await dropDatabase(inject('adminDatabaseUrl'), dbName).catch(() => undefined);
    if (ctx.config) {
      // the sandboxes of the file's environments a worker left serving (a worker killed on purpose)
      killTenantsOfPorts(ctx.config.environmentPorts.from, ctx.config.environmentPorts.to);
      // the networks that sandboxes made in the file's range: its worker's, or an npm start's the file ran there
      const { removeNetworksInRange } = await import('../../host/provider/sandbox');
      await removeNetworksInRange(ctx.config.environmentPorts.from, ctx.config.environmentPorts.to);
    }
    if (ctx.dataDir) {
      killProcessesUnder(ctx.dataDir); // what a worker killed on purpose left behind
      rmSync(ctx.dataDir, { recursive: true, force: true });
    }
    if (ctx.dataDir) tornDown(ctx.dataDir);
  });
  return ctx;
}
