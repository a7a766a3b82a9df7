import type { Connection } from '@temporalio/client';
import { z } from 'zod';
import type { Deps } from '../../system/deps';
import { WORKER_STALE_MS } from '../../core/worker-readiness';
import { readProcesses } from '../../system/run-state';
import { workerSettings } from '../../db/queries/worker-settings';
import { hostCounts } from '../../db/queries/hosts';

/** grpc.health.v1 HealthCheckResponse.ServingStatus.SERVING */
const SERVING = 1;

/** Each component's check waits at most this long. */
export const CHECK_TIMEOUT_MS = 2_000;

const state = z.enum(['ok', 'unavailable']);
const settingSchema = z.strictObject({
  status: z.enum(['ok', 'problem']),
  reason: z.string().nullable(),
  change: z.string().nullable().describe('The setting to change'),
});
const processSchema = z.strictObject({
  name: z.string(),
  status: z.enum(['starting', 'running', 'restarting', 'failed', 'stopped']),
  pid: z.number().int().nullable(),
  restarts: z.number().int(),
  last_exit: z.string().nullable(),
  reason: z.string().nullable().describe('Why it was given up (status failed)'),
  since: z.string(),
});
export const healthSchema = z.strictObject({
  status: z.enum(['ok', 'degraded', 'unavailable']),
  components: z.strictObject({
    database: z.strictObject({ status: state }),
    temporal: z.strictObject({ status: state }),
    worker: z.strictObject({
      status: state,
      ready: z.number().int().describe('Workers that reported ready recently'),
      seen_at: z.string().nullable(),
    }),
  }),
  hosts: z
    .strictObject({
      ready: z.number().int(),
      draining: z.number().int(),
      drained: z.number().int(),
      lost: z.number().int().describe('No heartbeat for HOST_LOST_SECONDS'),
    })
    .nullable()
    .describe('How many hosts have each status (null: the database does not answer)'),
  settings: z
    .strictObject({ storage: settingSchema, services: settingSchema })
    .nullable()
    .optional()
    .describe(
      "The host's settings as the freshest ready worker found them at its start (null: no worker, or the database did not answer within 2 s). Shown to the operator only (loopback with no forwarded header while TRUST_PROXY_HOPS is 0, or METRICS_TOKEN)",
    ),
  processes: z
    .array(processSchema)
    .nullable()
    .optional()
    .describe(
      'The processes `npm start` supervises (null when it does not run this system). Shown to the operator only (loopback with no forwarded header while TRUST_PROXY_HOPS is 0, or METRICS_TOKEN)',
    ),
});
type Health = z.infer<typeof healthSchema>;

function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    work,
    new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), ms))),
  ]).finally(() => clearTimeout(timer));
}

/**
 * One query for the database and the workers (their readiness rows), one gRPC health check for
 * Temporal, one for the host's settings as the freshest worker found them, in parallel, each bounded by
 * CHECK_TIMEOUT_MS; and `npm start`'s supervised processes (a process given up makes it `degraded`).
 */
export async function checkHealth(deps: Deps): Promise<Health> {
  const [db, temporal, settings, hosts] = await Promise.allSettled([
    within(
      CHECK_TIMEOUT_MS,
      deps
        .knex('worker_heartbeats')
        .where('seen_at', '>', deps.knex.raw(`now() - interval '${WORKER_STALE_MS / 1000} seconds'`))
        .first(deps.knex.raw('count(*)::int as ready'), deps.knex.raw('max(seen_at) as seen_at')),
    ),
    within(CHECK_TIMEOUT_MS, (deps.temporal.connection as Connection).healthService.check({})),
    within(CHECK_TIMEOUT_MS, workerSettings(deps.knex, { staleMs: WORKER_STALE_MS })),
    within(CHECK_TIMEOUT_MS, hostCounts(deps.knex, deps.config.hostLostSeconds)),
  ]);
  const row = db.status === 'fulfilled' ? (db.value as { ready: number; seen_at: Date | null }) : undefined;
  const components: Health['components'] = {
    database: { status: row ? 'ok' : 'unavailable' },
    temporal: { status: temporal.status === 'fulfilled' && temporal.value.status === SERVING ? 'ok' : 'unavailable' },
    worker: {
      status: row && row.ready > 0 ? 'ok' : 'unavailable',
      ready: row?.ready ?? 0,
      seen_at: row?.seen_at ? new Date(row.seen_at).toISOString() : null,
    },
  };
  const processes = readProcesses(deps.config.dataDir);
  const allOk =
    Object.values(components).every((c) => c.status === 'ok') && !processes?.some((p) => p.status === 'failed');
  const status = !row ? 'unavailable' : allOk ? 'ok' : 'degraded';
  return {
    status,
    components,
    hosts: hosts.status === 'fulfilled' ? hosts.value : null,
    settings: settings.status === 'fulfilled' ? settings.value : null,
    processes,
  };
}
