/**
 * `npm run host`: one host agent alone on a machine (CONTRACT "Hosts", docs/hosts.md). It is the worker
 * process (processes/worker.ts) with this machine's host settings, pointed at the control plane's Temporal
 * (TEMPORAL_ADDRESS) and PostgreSQL (DATABASE_URL), with the control plane's encryption key. It is supervised
 * as `npm start` supervises its children (restarted when it exits unexpectedly; a restart keeps the host's
 * name: same DATA_DIR, same agent token), prints `Host NAME joined` once ready, and stops on Ctrl-C.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../system/config';
import { checkReleaseStore } from '../host/release-store';
import { createKnex } from '../db/knex';
import { runDir } from '../system/run-state';
import { Supervision } from './supervision';
import { consoleChildren } from './start-children';
import { processBundlesAhead } from './process-bundles';
import { claimDataDir, releaseDataDir } from './start-lock';
import { bundleAhead, type WorkflowBundleAhead } from './bundle-ahead';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const say = (m: string) => console.log(`[host] ${m}`);

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (err) {
  say(`Could not start: ${(err as Error).message}`);
  process.exit(1);
}
const missing = (
  [
    ['DATABASE_URL', config.databaseUrl],
    ['TEMPORAL_ADDRESS', config.temporalAddress],
    ['ENCRYPTION_KEY', config.encryptionKey],
    ['ENCRYPTION_KEY_ID', config.encryptionKeyId],
  ] as const
)
  .filter(([, v]) => !v)
  .map(([k]) => k);
if (missing.length > 0) {
  say(
    `A host agent needs the control plane's ${missing.join(', ')}: run \`npm run hosts -- join ${config.hostName}\` on ` +
      'the control plane and start this one with what it prints. A host agent never generates a key.',
  );
  process.exit(1);
}
// A directory release store serves one machine only: this agent starts nothing on another machine's.
try {
  await checkReleaseStore(config.releaseStore, { create: false });
} catch (err) {
  say(`Could not start: ${(err as Error).message}`);
  process.exit(1);
}
mkdirSync(config.dataDir, { recursive: true });
const holder = claimDataDir(config.dataDir);
if (holder) {
  say(
    `Another npm start or npm run host runs with DATA_DIR ${config.dataDir} (pid ${holder}); nothing was started. ` +
      'Stop it first, or set DATA_DIR to another directory.',
  );
  process.exit(1);
}

const knex = createKnex(config.databaseUrl!);
const supervision = new Supervision({ runDir: runDir(config.dataDir), say });
let stopping = false;
let workflowBundle: WorkflowBundleAhead | null = null;
async function shutdown(code: number) {
  if (stopping) return;
  stopping = true;
  workflowBundle?.stop();
  say(`Stopping host ${config.hostName} (the worker with its tenants’ processes)...`);
  await supervision.stop(['worker']);
  supervision.clear();
  await knex.destroy().catch(() => undefined);
  releaseDataDir(config.dataDir);
  say('Stopped.');
  process.exit(code);
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.removeAllListeners(signal);
  process.on(signal, () => void shutdown(0));
}

try {
  workflowBundle = bundleAhead({ root, runDir: runDir(config.dataDir), say });
  const processBundles = processBundlesAhead(root, say);
  const { worker } = consoleChildren({
    root,
    config,
    knex,
    // the system's schedules are the control plane's worker's to ensure (REMINDER_SCHEDULE=on here to take them)
    env: {
      ...process.env,
      DATA_DIR: config.dataDir,
      VC_HOST_AGENT: '1',
      REMINDER_SCHEDULE: process.env.REMINDER_SCHEDULE || 'off',
      VC_WORKFLOW_BUNDLE_PATH: workflowBundle.file,
      ...(await processBundles),
    },
  });
  say(
    `Starting host agent ${config.hostName} (${config.hostAddress}) against Temporal at ${config.temporalAddress}...`,
  );
  await workflowBundle.done;
  await supervision.start(worker);
  say(`Host ${config.hostName} joined`);
} catch (err) {
  say(`Could not start: ${(err as Error).message}`);
  await shutdown(1);
}
