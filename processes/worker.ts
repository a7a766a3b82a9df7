import { loadConfig } from '../system/config';
import { createDeps } from './deps';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startWorker } from './worker-runtime';
import { announceReady } from '../core/worker-readiness';
import { sealWebhookUrls } from '../db/queries/integrations';
import { checkHostSettings } from '../host/provider/host-settings';
import { ensureSystemSchedules } from '../core/temporal-starts';
import { onStopSignals, parentGone } from './stop-signals';

// The worker process: `tsx processes/worker.ts`, configured by the environment (see README).
const config = loadConfig();
Runtime.install({ logger: new DefaultLogger(config.logLevel === 'debug' ? 'DEBUG' : 'WARN') });
const deps = await createDeps(config, { name: 'worker' });
const running = await startWorker(deps);
deps.logger.info({ taskQueue: config.taskQueue, namespace: config.temporalNamespace }, 'worker running');
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
const readiness = await announceReady(deps.knex, config.taskQueue, undefined, settings);
deps.logger.info('worker ready');
let stopping = false;
const supervisor = process.ppid;
// npm start's supervisor died (the kernel sent the signal, setpriv --pdeathsig): Temporal and the edge are being
// stopped at the same time, so the tenants' processes go first, depending on none of them. Asked again at every
// signal: the first may come while the dying supervisor still counts as the parent (processes/stop-signals.ts).
// A worker that dies alone (a crash, SIGKILL) stops nothing: its tenants keep serving, the next worker adopts them.
let tenantsStopped: Promise<void> | undefined;
const stopTenantsIfOrphaned = () => {
  if (!tenantsStopped && parentGone(supervisor))
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
  await readiness.stop();
  await running.shutdown();
  await deps.close();
  process.exit(0);
};
onStopSignals(() => void stop());
await running.done;
