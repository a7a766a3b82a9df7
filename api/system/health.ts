import type { Connection } from '@temporalio/client';
import { z } from 'zod';
import type { Deps } from '../../system/deps';
import { WORKER_STALE_MS } from '../../system/worker-readiness';

/** grpc.health.v1 HealthCheckResponse.ServingStatus.SERVING */
const SERVING = 1;

/** Each component's check waits at most this long. */
export const CHECK_TIMEOUT_MS = 2_000;

const state = z.enum(['ok', 'unavailable']);
export const healthSchema = z.object({
  status: z.enum(['ok', 'degraded', 'unavailable']),
  components: z.object({
    database: z.object({ status: state }),
    temporal: z.object({ status: state }),
    worker: z.object({
      status: state,
      ready: z.number().int().describe('Workers that reported ready recently'),
      seen_at: z.string().nullable(),
    }),
  }),
});
export type Health = z.infer<typeof healthSchema>;

function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    work,
    new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), ms))),
  ]).finally(() => clearTimeout(timer));
}

/**
 * One query for the database and the workers (their readiness rows), one gRPC health check for
 * Temporal, in parallel, each bounded by CHECK_TIMEOUT_MS.
 */
export async function checkHealth(deps: Deps): Promise<Health> {
  const [db, temporal] = await Promise.allSettled([
    within(
      CHECK_TIMEOUT_MS,
      deps
        .knex('worker_heartbeats')
        .where('seen_at', '>', deps.knex.raw(`now() - interval '${WORKER_STALE_MS / 1000} seconds'`))
        .first(deps.knex.raw('count(*)::int as ready'), deps.knex.raw('max(seen_at) as seen_at')),
    ),
    within(CHECK_TIMEOUT_MS, (deps.temporal.connection as Connection).healthService.check({})),
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
  const status = !row ? 'unavailable' : Object.values(components).every((c) => c.status === 'ok') ? 'ok' : 'degraded';
  return { status, components };
}
