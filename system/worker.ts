import { loadConfig } from './config';
import { createDeps } from './deps';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startWorker } from './worker-runtime';
import { ensureReminderSchedule } from '../activities/reminders/schedule';
import { ensurePruneSchedule } from '../activities/maintenance/schedule';
import { announceReady } from './worker-readiness';
import { ensureResourcePruneSchedule } from '../activities/machines/prune';
import { sealWebhookUrls } from '../db/queries/integrations';
import { checkHostSettings } from '../activities/provider/host-settings';
import { ensureCertificateRenewalSchedule } from '../activities/certificates/schedule';

// The worker process: `tsx system/worker.ts`, configured by the environment (see README).
const config = loadConfig();
Runtime.install({ logger: new DefaultLogger(config.logLevel === 'debug' ? 'DEBUG' : 'WARN') });
const deps = await createDeps(config, { name: 'worker' });
const running = await startWorker(deps);
deps.logger.info({ taskQueue: config.taskQueue, namespace: config.temporalNamespace }, 'worker running');
// The daily token-expiry reminders (created once, brought up to the current settings on every start;
// an operator's pause is kept). A failure here leaves the worker running and is logged.
// REMINDER_SCHEDULE=off leaves the schedule to another worker.
async function ensureReminders() {
  try {
    const ensured = await ensureReminderSchedule(deps.temporal, {
      taskQueue: config.taskQueue,
      hourUtc: config.reminderHourUtc,
      namespace: config.temporalNamespace,
    });
    deps.logger.info(
      { scheduleId: ensured.scheduleId, created: ensured.created, hourUtc: config.reminderHourUtc },
      'token-expiry reminder schedule ensured',
    );
  } catch (err) {
    deps.logger.error(
      { err },
      'token-expiry reminder schedule could not be ensured; reminders will not go out until the worker restarts',
    );
  }
}
// The daily prune of expired sessions, codes, stale sign-ups and old reminder rows: same rules.
async function ensurePrune() {
  try {
    const ensured = await ensurePruneSchedule(deps.temporal, {
      taskQueue: config.taskQueue,
      hourUtc: config.pruneHourUtc,
      namespace: config.temporalNamespace,
    });
    deps.logger.info(
      { scheduleId: ensured.scheduleId, created: ensured.created, hourUtc: config.pruneHourUtc },
      'prune-expired schedule ensured',
    );
  } catch (err) {
    deps.logger.error(
      { err },
      'prune-expired schedule could not be ensured; expired records stay until the worker restarts',
    );
  }
}
// The daily prune of resource samples older than 90 days: same rules (REMINDER_SCHEDULE=off leaves it too).
async function ensureResourcePrune() {
  await ensureResourcePruneSchedule(deps.temporal, config.taskQueue).then(
    (r) =>
      deps.logger.info(
        { scheduleId: 'resource-samples-prune', created: r.created },
        'resource sample prune schedule ensured',
      ),
    (err) => deps.logger.error({ err }, 'resource sample prune schedule could not be ensured'),
  );
}
// The hourly certificate renewals (CONTRACT "Certificates"): same rules.
async function ensureCertificateRenewals() {
  await ensureCertificateRenewalSchedule(deps.temporal, config.taskQueue).then(
    (r) => deps.logger.info(r, 'certificate renewal schedule ensured'),
    (err) => deps.logger.error({ err }, 'certificate renewal schedule could not be ensured'),
  );
}
if (config.reminderSchedule)
  await Promise.all([ensureReminders(), ensurePrune(), ensureResourcePrune(), ensureCertificateRenewals()]);
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
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await readiness.stop();
  await running.shutdown();
  await deps.close();
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
await running.done;
