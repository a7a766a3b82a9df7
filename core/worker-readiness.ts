import { hostname } from 'node:os';
import type { Knex } from 'knex';
import { WorkerHeartbeat } from '../db/models/worker-heartbeat';
import type { HostSettings } from '../db/queries/worker-settings';

/** A worker refreshes its row this often; GET /health counts a worker alive while its row is fresher than WORKER_STALE_MS. */
const WORKER_HEARTBEAT_MS = 5_000;
export const WORKER_STALE_MS = 20_000;

export const workerIdentity = (pid = process.pid) => `${hostname()}:${pid}`;

/**
 * The worker's readiness row (worker_heartbeats): written once the worker is ready, refreshed every
 * WORKER_HEARTBEAT_MS, removed on a clean stop. A worker that dies leaves a row that goes stale. It carries
 * what the worker found about the host's settings (`settings`), for GET /health and the services routes.
 */
export async function announceReady(
  knex: Knex,
  taskQueue: string,
  identity = workerIdentity(),
  settings: HostSettings | null = null,
  /** The worker's host (HOST_NAME): whose settings they are. */
  host: string | null = null,
): Promise<{ stop(): Promise<void> }> {
  const now = new Date();
  await WorkerHeartbeat.query(knex)
    .insert({ identity, task_queue: taskQueue, started_at: now, ready_at: now, seen_at: now, settings, host })
    .onConflict('identity')
    .merge();
  const timer = setInterval(() => {
    void WorkerHeartbeat.query(knex)
      .findById(identity)
      .patch({ seen_at: new Date() })
      .catch(() => undefined); // the database may be away for a moment; /health then says so
  }, WORKER_HEARTBEAT_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await WorkerHeartbeat.query(knex)
        .deleteById(identity)
        .catch(() => undefined);
    },
  };
}
