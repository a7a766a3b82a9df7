import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from './config';
import { loadSecrets } from './secrets';
import { startEmbeddedPostgres } from './embedded-postgres';
import { startTemporalDevServer, ensureSearchAttributes } from './temporal';
import { createKnex } from '../db/knex';
import { migrateLatest } from '../db/migrate';
import { Connection } from '@temporalio/client';
import { describeSmtpUrl } from './mail/transport';
import type { Knex } from 'knex';
import { WorkerHeartbeat } from '../db/models/worker-heartbeat';
import { workerIdentity } from './worker-readiness';

/**
 * `npm start`: the whole system on embedded defaults. PostgreSQL (DATABASE_URL, else embedded under
 * DATA_DIR), the Temporal dev server (TEMPORAL_ADDRESS, else the CLI's dev server under DATA_DIR),
 * migrations, then the worker and the API as child processes. Ctrl-C stops everything it started.
 */
const root = dirname(dirname(fileURLToPath(import.meta.url)));
const say = (m: string) => console.log(`[start] ${m}`);
const config = loadConfig();
mkdirSync(config.dataDir, { recursive: true });
loadSecrets(config.dataDir, { tokenHmacKey: config.tokenHmacKey, encryptionKey: config.encryptionKey }); // generated once here, before two processes race for it

const stops: Array<() => Promise<unknown>> = [];
const children: ChildProcess[] = [];
let stopping = false;

async function shutdown(code: number) {
  if (stopping) return;
  stopping = true;
  say('Stopping...');
  await Promise.all(
    children.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          const timer = setTimeout(() => c.kill('SIGKILL'), 30_000); // the worker stops its web processes first
          c.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          c.kill('SIGTERM');
        }),
    ),
  );
  for (const stop of stops.reverse()) await stop().catch((e) => say(`stop failed: ${(e as Error).message}`));
  say('Stopped.');
  process.exit(code);
}
// embedded-postgres installs an exit hook on these signals that exits before the rest has stopped;
// this process owns the stop order (API and worker, then Temporal, then PostgreSQL).
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.removeAllListeners(signal);
  process.on(signal, () => void shutdown(0));
}

try {
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    const port = Number(process.env.EMBEDDED_POSTGRES_PORT || 54329);
    say(`Starting embedded PostgreSQL under ${join(config.dataDir, 'postgres')} on 127.0.0.1:${port}...`);
    const pg = await startEmbeddedPostgres(config.dataDir, port, say);
    stops.push(pg.stop);
    databaseUrl = pg.url;
  }
  let temporalAddress = config.temporalAddress;
  let uiUrl = process.env.TEMPORAL_UI_URL ?? '(your Temporal Web UI)';
  if (!temporalAddress) {
    const cliPath = process.env.TEMPORAL_CLI;
    if (!cliPath) throw new Error('TEMPORAL_CLI is not set; run through `npm start`, which finds or builds the CLI');
    say(`Starting the Temporal dev server (${cliPath}) with its data under ${join(config.dataDir, 'temporal')}...`);
    const dev = await startTemporalDevServer({
      cliPath,
      dataDir: config.dataDir,
      port: config.temporalPort,
      uiPort: config.temporalPort + 1000,
      namespace: config.temporalNamespace,
    });
    stops.push(dev.stop);
    temporalAddress = dev.address;
    uiUrl = dev.uiUrl;
  } else {
    const connection = await Connection.connect({ address: temporalAddress });
    await ensureSearchAttributes(connection, config.temporalNamespace);
    await connection.close();
  }
  say('Applying database migrations...');
  const knex = createKnex(databaseUrl);
  const applied = await migrateLatest(knex);
  say(applied.length ? `Applied ${applied.length} migration(s).` : 'Database is up to date.');

  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    DATA_DIR: config.dataDir,
  };
  const started = new Map<string, ChildProcess>();
  // The edge first (it serves the environments' ports and EDGE_PORT, needing only PostgreSQL), then the worker and the API.
  for (const [name, script] of [
    ['edge', 'system/edge.ts'],
    ['worker', 'system/worker.ts'],
    ['api', 'system/api.ts'],
  ] as const) {
    say(`Starting the ${name} process...`);
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, script)], {
      cwd: root,
      env,
      stdio: 'inherit',
    });
    child.once('exit', (code, signal) => {
      if (!stopping) {
        say(`The ${name} process exited (${signal ?? code}); stopping the rest.`);
        void shutdown(1);
      }
    });
    children.push(child);
    started.set(name, child);
  }
  await waitForApi(`http://127.0.0.1:${config.port}/api/vc/v1/health`);
  say('Waiting for the worker to be ready (schedules, environments restored)...');
  await waitForWorker(knex, workerIdentity(started.get('worker')!.pid));
  await knex.destroy();
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
      'Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );
} catch (err) {
  say(`Could not start: ${(err as Error).message}`);
  await shutdown(1);
}

async function waitForApi(url: string) {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline && !stopping) {
    try {
      const r = await fetch(url);
      if (r.ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  if (!stopping) throw new Error(`The API did not answer at ${url}`);
}

/** The worker this process started writes its readiness row once it is ready (system/worker-readiness.ts). */
async function waitForWorker(knex: Knex, identity: string) {
  const deadline = Date.now() + 300_000;
  while (Date.now() < deadline && !stopping) {
    if (
      await WorkerHeartbeat.query(knex)
        .findById(identity)
        .catch(() => undefined)
    )
      return;
    await new Promise((r) => setTimeout(r, 300));
  }
  if (!stopping) throw new Error('The worker did not become ready');
}
