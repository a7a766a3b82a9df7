import { existsSync } from 'node:fs';
import { loadConfig } from '../system/config';
import { createDeps } from './deps';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { type RunningWorker, startWorker } from './worker-runtime';
import { announceReady } from '../core/worker-readiness';
import { sealWebhookUrls } from '../db/queries/integrations';
import { checkHostSettings } from '../host/provider/host-settings';
import { ensureSystemSchedules } from '../core/schedules';
import { HostNameInUse, registerHost } from '../core/host-registration';
import { onStopSignals, parentGone } from './stop-signals';
import { adoptUnplacedServers } from '../db/queries/hosts';
import { checkReleaseStore } from '../host/release-store';

// The worker process: `tsx processes/worker.ts`, configured by the environment (see README).
const config = loadConfig();
// A host agent alone (`npm run host`, processes/host.ts) takes the control plane's key: it never makes one.
if (process.env.VC_HOST_AGENT === '1' && !config.encryptionKey) {
  console.error(
    'A host agent needs the control plane’s ENCRYPTION_KEY and ENCRYPTION_KEY_ID (`npm run hosts -- join NAME` on the control plane prints them); it never generates a key.',
  );
  process.exit(1);
}
// The release store: a directory serves one machine only, and a host agent alone never makes one (docs/hosts.md).
await checkReleaseStore(config.releaseStore, { create: process.env.VC_HOST_AGENT !== '1' }).catch((err) => {
  console.error((err as Error).message);
  process.exit(1);
});
Runtime.install({ logger: new DefaultLogger(config.logLevel === 'debug' ? 'DEBUG' : 'WARN') });
const deps = await createDeps(config, { name: 'worker' });
// This machine's host in the registry (refused while another agent with the name heartbeats), before any work.
const host = await registerHost(deps.knex, config, {
  encryptionKeyId: deps.secrets.encryptionKey.id,
  onLostName: () => {
    deps.logger.error(
      { host: config.hostName },
      'another agent took this host name after this one missed its heartbeats; stopping',
    );
    process.kill(process.pid, 'SIGTERM');
  },
  onError: (err) => deps.logger.warn({ err }, 'host heartbeat failed'),
  // npm start's worker runs beside the services server; an agent (`npm run host`) never does
  runsServices: process.env.VC_HOST_AGENT !== '1',
}).catch(async (err) => {
  if (!(err instanceof HostNameInUse)) throw err;
  console.error(err.message);
  await deps.close();
  process.exit(1);
});
// npm start's own host takes the web servers created before placement existed (servers.host null): they run here.
if (process.env.VC_HOST_AGENT !== '1') {
  const adopted = await adoptUnplacedServers(deps.knex, config.hostName);
  if (adopted > 0) deps.logger.info({ host: config.hostName, servers: adopted }, 'servers placed before hosts adopted');
}
// Stop signals are taken from here on, before the worker takes its first task: a SIGTERM while the rest of the
// start runs (the schedules, the settings' checks) stops it as cleanly as later. Before, only the Temporal
// runtime's own handler took it there: it stopped the Temporal workers, and the process then stayed, neither
// ready nor exiting, until its supervisor killed it (test/system/worker-stop.test.ts).
let running: RunningWorker | undefined;
let readiness: { stop(): Promise<void> } | undefined;
/** The rest of the start once the worker runs (schedules, settings, the readiness row): a stop lets it end first. */
let startRest: Promise<unknown> = Promise.resolve();
let stopping = false;
const supervisor = process.ppid;
// npm start's supervisor died (the kernel sent the signal, setpriv --pdeathsig): Temporal and the edge are being
// stopped at the same time, so the tenants' processes go first, depending on none of them. Asked again at every
// signal: the first may come while the dying supervisor still counts as the parent (processes/stop-signals.ts).
// A worker that dies alone (a crash, SIGKILL) stops nothing: its tenants keep serving, the next worker adopts them.
let tenantsStopped: Promise<void> | undefined;
const stopTenantsIfOrphaned = () => {
  if (!tenantsStopped && running && parentGone(supervisor))
    tenantsStopped = running
      .stopHost()
      .catch((err) =>
        deps.logger.error({ err: (err as Error).message }, "the tenants' processes did not stop cleanly"),
      );
  return tenantsStopped;
};
const stop = async () => {
  await stopTenantsIfOrphaned();
  if (stopping) return;
  stopping = true;
  await startRest.catch(() => undefined);
  await readiness?.stop().catch((err) => deps.logger.warn({ err: (err as Error).message }, 'readiness not withdrawn'));
  host.stop();
  // before startWorker returned (no task taken yet): nothing to drain
  await running
    ?.shutdown()
    .catch((err) => deps.logger.error({ err: (err as Error).message }, 'the worker did not stop cleanly'));
  await deps.close();
  process.exit(0);
};
onStopSignals(() => void stop());
/**
 * Test hook, nothing else reads it: VC_FAULT_INJECT=hold-start:<file> holds the rest of the start (after the worker
 * takes tasks, before it announces itself ready) while <file> exists (test/system/worker-stop.test.ts).
 */
async function heldByTest(): Promise<void> {
  const fault = process.env.VC_FAULT_INJECT ?? '';
  if (!fault.startsWith('hold-start:')) return;
  const file = fault.slice('hold-start:'.length);
  while (existsSync(file)) await new Promise((r) => setTimeout(r, 100));
}
running = await startWorker(deps, { hostName: config.hostName });
startRest = (async () => {
  await heldByTest();
  deps.logger.info(
    { taskQueue: config.taskQueue, namespace: config.temporalNamespace, host: config.hostName },
    'worker running',
  );
  // The system's schedules (token-expiry reminders, prune-expired, resource-sample prune, certificate renewals):
  // created once, brought up to the current settings on every start (an operator's pause is kept); a failure
  // leaves the worker running and is logged. REMINDER_SCHEDULE=off leaves them to another worker.
  if (config.reminderSchedule) await ensureSystemSchedules(deps);
  // Webhook URLs kept in the clear by an older version are sealed now (migration 547).
  await sealWebhookUrls(deps.knex, deps.secrets).then(
    (n) => n > 0 && deps.logger.info({ sealed: n }, 'webhook URLs sealed'),
    (err) => deps.logger.error({ err }, 'webhook URLs could not be sealed; they are sealed when read'),
  );
  // Ready: environments restored (startWorker) and schedules ensured. `npm start` waits for this row.
  // With what it found about the host's settings (GET /health, npm start's banner, POST .../services).
  const settings = await checkHostSettings(config);
  for (const [name, check] of Object.entries(settings))
    if (check.status !== 'ok') deps.logger.warn({ setting: name, change: check.change }, check.reason ?? name);
  readiness = await announceReady(deps.knex, config.taskQueue, undefined, settings, config.hostName);
})();
await startRest;
deps.logger.info('worker ready');
await running.done;
