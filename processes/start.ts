import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../system/config';
import { secretsFor } from '../system/secrets';
import { embeddedPostgresChild } from './embedded-postgres';
import { temporalDevServerChild, ensureSearchAttributes } from './temporal';
import { startTcpRelay, type TcpRelay } from './tcp-relay';
import { createKnex } from '../db/knex';
import { migrateLatest } from '../db/migrate';
import { Connection } from '@temporalio/client';
import { describeSmtpUrl } from '../system/mail/transport';
import type { Knex } from 'knex';
import { Supervision } from './supervision';
import { runDir } from '../system/run-state';
import { consoleChildren, shipperChild } from './start-children';
import { holdRequestLogSocket, type RequestLogSocket } from './request-log-socket';
import { bundleAhead, type WorkflowBundleAhead } from './bundle-ahead';
import { processBundlesAhead } from './process-bundles';
import { settingsAdvice } from './host-settings';
import { workerIdentity } from '../core/worker-readiness';
import { HaproxyProcess, stopLeftDataPlane } from '../edge/haproxy/process';
import { forgetStoppedEdge } from '../edge/edge-id';
import { haproxyPaths } from '../edge/haproxy/paths';
import { stopLeftVarnish } from '../edge/cdn/pids';
import { claimDataDir, releaseDataDir } from './start-lock';
import { pitrServer } from '../host/pitr';
import { archiveSettings, assertPgbackrest, servicesPostgresChild, setUpServicesServer } from './services-postgres';
import { removeKernelState, stopLeftChildren, takenEdgePorts } from './leftovers';

/**
 * `npm start`: the whole system on embedded defaults, supervised. PostgreSQL (DATABASE_URL, else embedded
 * under DATA_DIR), the services server the console runs (SERVICES_PGDATA, or the embedded one; its WAL archived),
 * the Temporal dev server (TEMPORAL_ADDRESS, else the CLI's dev server under DATA_DIR),
 * migrations, then the edge, the worker and the API. Each child runs in its own process group and is
 * restarted when it exits unexpectedly (processes/supervision.ts; docs/operating.md). Ctrl-C (or SIGTERM)
 * stops them in order: the API and the edge, the worker (with its tenants' processes), Temporal, PostgreSQL.
 */
const root = dirname(dirname(fileURLToPath(import.meta.url)));
const say = (m: string) => console.log(`[start] ${m}`);
const config = loadConfig();
mkdirSync(config.dataDir, { recursive: true });
const holder = claimDataDir(config.dataDir);
if (holder) {
  say(
    `Another npm start runs with DATA_DIR ${config.dataDir} (pid ${holder}); nothing was started or stopped. ` +
      `Stop it first (Ctrl-C in its terminal, or kill -INT ${holder}), or set DATA_DIR to another directory.`,
  );
  process.exit(1);
}
// generated once here, before two processes race for it
const secrets = secretsFor(config);

const supervision = new Supervision({ runDir: runDir(config.dataDir), say });
// the shipper after the edge: HAProxy's last lines reach it before it stops
const STOP_ORDER = ['api', 'edge', 'shipper', 'worker', 'temporal', 'services-postgres', 'postgres'];
let knex: Knex | null = null;
let temporalRelay: TcpRelay | null = null;
let stopping = false;
let workflowBundle: WorkflowBundleAhead | null = null;
let requestLog: RequestLogSocket | null = null;

async function shutdown(code: number) {
  workflowBundle?.stop();
  if (stopping) return;
  stopping = true;
  say('Stopping (API, edge and request log shipper, the worker with its tenants’ processes, Temporal, PostgreSQL)...');
  await supervision.stop(STOP_ORDER.slice(0, 4));
  await requestLog?.close();
  // the edge's HAProxy outlives a killed edge (tenants stay served): a stop of the whole leaves none behind
  if (await stopLeftDataPlane(haproxyPaths(config.dataDir)).catch(() => false))
    say('Stopped the edge’s HAProxy left running.');
  // its row goes with it (the edge's own stop deletes it; not a SIGKILLed one's): nothing waits for it then
  if (knex && !(await new HaproxyProcess(haproxyPaths(config.dataDir)).running()))
    await forgetStoppedEdge(knex, haproxyPaths(config.dataDir)).catch(() => undefined);
  // the supervisor's own connection goes before PostgreSQL does
  const closing = knex?.destroy().catch(() => undefined);
  if (await stopLeftVarnish(join(config.dataDir, 'edge', 'varnish')).catch(() => false))
    say('Stopped the edge’s Varnish left running.');
  // the tenants are stopped: what their sandboxes made in the kernel goes too
  await removeKernelState(config).catch((err: Error) =>
    say(`Could not remove the sandboxes' networks: ${err.message}`),
  );
  await closing;
  await temporalRelay?.close();
  await supervision.stop(STOP_ORDER.slice(4));
  supervision.clear();
  say('Stopped.');
  releaseDataDir(config.dataDir);
  process.exit(code);
}
// The children are in process groups of their own: a terminal's Ctrl-C reaches this process alone, which
// stops them in order. (embedded-postgres's own exit hooks are not installed: its server is a plain child.)
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.removeAllListeners(signal);
  process.on(signal, () => void shutdown(0));
}

try {
  // a previous supervisor of this DATA_DIR that died where its children could not follow it (no setpriv)
  const left = await stopLeftChildren(config.dataDir);
  if (left.length) say(`Stopped what a previous npm start left running: ${left.join(', ')}.`);
  const taken = await takenEdgePorts(config);
  if (taken.length)
    throw new Error(`another program holds ${taken.join(' and ')}: stop it, or set these to free ports`);
  workflowBundle = bundleAhead({ root, runDir: runDir(config.dataDir), say });
  const processBundles = processBundlesAhead(root, say);
  let databaseUrl = config.databaseUrl;
  // The services server the console runs (its WAL archived): SERVICES_PGDATA, else the embedded server when
  // nothing else is set. The worker and the API are told with SERVICES_PGDATA, SERVICES_PORT, SERVICES_DATABASE_URL.
  const services: NodeJS.ProcessEnv = {};
  if (config.servicesPgdata && config.servicesDatabaseUrl)
    throw new Error(
      'SERVICES_PGDATA is a services server npm start runs itself: unset SERVICES_DATABASE_URL, or SERVICES_PGDATA',
    );
  if (!databaseUrl) {
    const port = Number(process.env.EMBEDDED_POSTGRES_PORT || 54329);
    const on = config.controlPlaneBind === '127.0.0.1' ? '127.0.0.1' : `127.0.0.1 and ${config.controlPlaneBind}`;
    say(`Starting embedded PostgreSQL under ${join(config.dataDir, 'postgres')} on ${on}:${port}...`);
    const embeddedServes = !config.servicesPgdata && !config.servicesDatabaseUrl;
    const server = embeddedServes
      ? pitrServer({ ...config, servicesPgdata: join(config.dataDir, 'postgres'), servicesPort: port })
      : null;
    if (server) await assertPgbackrest();
    const pg = await embeddedPostgresChild(
      config.dataDir,
      port,
      say,
      server ? () => archiveSettings(server, secrets) : undefined,
      config.controlPlaneBind,
    );
    await supervision.start(pg.spec);
    databaseUrl = await pg.setUp();
    if (server) {
      await setUpServicesServer(server, databaseUrl, secrets, say);
      Object.assign(services, {
        SERVICES_PGDATA: server.pgdata,
        SERVICES_PORT: String(port),
        SERVICES_DATABASE_URL: databaseUrl,
      });
    }
  }
  if (config.servicesPgdata) {
    await assertPgbackrest();
    say(`Starting the services server under ${config.servicesPgdata} on 127.0.0.1:${config.servicesPort}...`);
    const s = await servicesPostgresChild(config, secrets, say);
    await supervision.start(s.spec);
    await setUpServicesServer(s.server, s.url, secrets, say);
    services.SERVICES_DATABASE_URL = s.url;
  }
  let temporalAddress = config.temporalAddress;
  let uiUrl = process.env.TEMPORAL_UI_URL ?? '(your Temporal Web UI)';
  if (!temporalAddress) {
    const cliPath = process.env.TEMPORAL_CLI;
    if (!cliPath) throw new Error('TEMPORAL_CLI is not set; run through `npm start`, which finds or builds the CLI');
    say(`Starting the Temporal dev server (${cliPath}) with its data under ${join(config.dataDir, 'temporal')}...`);
    const dev = temporalDevServerChild({
      cliPath,
      dataDir: config.dataDir,
      port: config.temporalPort,
      uiPort: config.temporalPort + 1000,
      namespace: config.temporalNamespace,
      // where hosts reach it (CONTROL_PLANE_BIND): it has no authentication (docs/hosts.md). Every address, or
      // loopback and a relay on the one address (the dev server cannot listen on it alone: processes/tcp-relay.ts)
      ip: config.controlPlaneBind === '0.0.0.0' ? '0.0.0.0' : '127.0.0.1',
    });
    await supervision.start(dev.spec);
    temporalAddress = dev.address;
    uiUrl = dev.uiUrl;
    if (!['127.0.0.1', '0.0.0.0'].includes(config.controlPlaneBind)) {
      say(`Relaying ${config.controlPlaneBind}:${config.temporalPort} to the Temporal dev server for hosts...`);
      temporalRelay = await startTcpRelay({
        host: config.controlPlaneBind,
        port: config.temporalPort,
        to: { host: '127.0.0.1', port: config.temporalPort },
      });
    }
  } else {
    const connection = await Connection.connect({ address: temporalAddress });
    await ensureSearchAttributes(connection, config.temporalNamespace);
    await connection.close();
  }
  say('Applying database migrations...');
  knex = createKnex(databaseUrl);
  const applied = await migrateLatest(knex);
  say(applied.length ? `Applied ${applied.length} migration(s).` : 'Database is up to date.');

  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    DATA_DIR: config.dataDir,
    ...services,
    VC_WORKFLOW_BUNDLE_PATH: workflowBundle.file,
    ...(await processBundles),
  };
  const children = consoleChildren({ root, config, knex, env });
  // The request log's shipper first (HAProxy's ring connects to it); then the edge (it serves the environments'
  // ports and EDGE_PORT, needing only PostgreSQL), the worker (ready once environments are restored and
  // schedules ensured: a restore waits for the edge to apply it) and the API, side by side: each loads and
  // connects on its own, and "running" is said once all of them are ready.
  say('Starting the request log shipper process...');
  // its socket is this process's: HAProxy's ring always finds it, and rests while no shipper reads it
  requestLog = await holdRequestLogSocket(config.dataDir);
  await supervision.start(shipperChild({ root, env, requestLog }));
  say('Starting the edge process...');
  const edge = supervision.start(children.edge);
  edge.catch(() => undefined); // settled below
  // the worker loads the workflows' bundle, begun before PostgreSQL (usually made by now)
  await workflowBundle.done;
  say('Starting the worker process and waiting for it to be ready (schedules, environments restored)...');
  const worker = supervision.start(children.worker);
  say('Starting the api process...');
  const api = supervision.start(children.api);
  const starts = await Promise.allSettled([edge, worker, api]);
  const refused = starts.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (refused) throw refused.reason;
  const advice = await settingsAdvice(knex, workerIdentity(supervision.pid('worker') ?? 0));
  const mail = config.smtpUrl ? describeSmtpUrl(config.smtpUrl) : `.eml files under ${join(config.dataDir, 'mail')}`;
  console.log(
    [
      '',
      'Hosting Console is running.',
      `  Web console:      ${config.baseUrl}/`,
      `  API base URL:     ${config.baseUrl}/api/vc/v1   (docs: ${config.baseUrl}/api/vc/v1/docs)`,
      `  Temporal Web UI:  ${uiUrl}   (namespace ${config.temporalNamespace})`,
      `  Edge:             http://${config.environmentHost}:${config.edgePort}   (verified domains by Host header; each environment also on its own port)`,
      `  E-mail goes to:   ${mail}`,
      `  Data:             ${config.dataDir}`,
      `  Processes:        ${supervision
        .states()
        .map((s) => `${s.name} ${s.pid}`)
        .join(', ')}   (restarted when they exit; pid files under ${runDir(config.dataDir)})`,
      ...advice.map((line) => `  To change:        ${line}`),
      'Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );
} catch (err) {
  say(`Could not start: ${(err as Error).message}`);
  await shutdown(1);
}
