/**
 * Prometheus metrics of the API process (`GET /metrics`, prom-client): request latency by route, refusals
 * by error code, workflow start latency by task type, and tasks by kind, type and status (read from
 * PostgreSQL when scraped, so every API process reports the same counts).
 */
import type { Knex } from 'knex';
import type { Middleware } from 'koa';
import client from 'prom-client';
import { type Host, listHosts } from '../db/queries/hosts';
import type { CredentialCache } from '../system/credential-cache';

export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });

export const metrics = {
  requestSeconds: new client.Histogram({
    name: 'vc_http_request_duration_seconds',
    help: 'API request latency by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  }),
  refusals: new client.Counter({
    name: 'vc_http_refusals_total',
    help: 'Requests answered with an error, by error code',
    labelNames: ['code', 'status'] as const,
    registers: [registry],
  }),
  workflowStart: new client.Histogram({
    name: 'vc_workflow_start_duration_seconds',
    help: "Latency of starting a task's workflow, by task type",
    labelNames: ['type'] as const,
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [registry],
  }),
};

/**
 * The database the gauges read: the last one given (one per process in the product; a test worker that runs
 * several files in one process gives each file's in turn, and the metrics are module-level, registered at the
 * first).
 */
let tasksKnex: Knex | undefined;
let hostsSource: { knex: Knex; lostSeconds: number } | undefined;
let credentialCache: CredentialCache<unknown> | undefined | null = null;

/** The tasks gauge reads its values from the database at scrape time (one GROUP BY). */
export function watchTasks(knex: Knex): void {
  const registered = tasksKnex !== undefined;
  tasksKnex = knex;
  if (registered) return;
  new client.Gauge({
    name: 'vc_tasks',
    help: 'Tasks by kind, type and status',
    labelNames: ['kind', 'type', 'status'] as const,
    registers: [registry],
    async collect() {
      const rows: Array<{ kind: string; type: string; status: string; n: number }> = await tasksKnex!('tasks')
        .select('kind', 'type', 'status')
        .count<Array<{ kind: string; type: string; status: string; n: number }>>({ n: '*' })
        .groupBy('kind', 'type', 'status');
      this.reset();
      for (const r of rows) this.set({ kind: r.kind, type: r.type, status: r.status }, Number(r.n));
    },
  });
}

/**
 * Per-host gauges (CONTRACT "Hosts"), read from the host registry at scrape time: `vc_host_ready` (1 when
 * ready, else 0: draining, drained, lost), `vc_host_capacity_memory_mb`, `vc_host_used_memory_mb` and
 * `vc_host_environments`. A scrape collects every metric at once: the four share one read of the registry.
 */
export function watchHosts(knex: Knex, lostSeconds: number): void {
  const registered = hostsSource !== undefined;
  hostsSource = { knex, lostSeconds };
  if (registered) return;
  let reading: Promise<Host[]> | null = null;
  const read = () => {
    const { knex: db, lostSeconds: lost } = hostsSource!;
    reading ??= listHosts(db, lost).finally(() => {
      reading = null;
    });
    return reading;
  };
  const gauge = (name: string, help: string, value: (h: Host) => number) =>
    new client.Gauge({
      name,
      help,
      labelNames: ['host'] as const,
      registers: [registry],
      async collect() {
        const hosts = await read();
        this.reset();
        for (const h of hosts) this.set({ host: h.name }, value(h));
      },
    });
  gauge('vc_host_ready', 'Whether the host is ready (1) or draining, drained or lost (0)', (h) =>
    h.status === 'ready' ? 1 : 0,
  );
  gauge('vc_host_capacity_memory_mb', "The host's memory capacity (HOST_CAPACITY), MB", (h) => h.capacity.memory_mb);
  gauge('vc_host_used_memory_mb', 'Memory of the servers placed on the host, MB', (h) => h.used.memory_mb);
  gauge('vc_host_environments', 'Environments with a server placed on the host', (h) => h.environments);
}

/**
 * The token look-up cache (system/credential-cache.ts): `vc_credential_cache_listening` (1 while its LISTEN
 * connection is up, so entries are kept; 0 while look-ups go to the database) and
 * `vc_credential_cache_listen_losses_total` (connections lost since the process started). Both are 0 in a
 * process without the cache.
 */
export function watchCredentialCache(cache: CredentialCache<unknown> | undefined): void {
  const registered = credentialCache !== null;
  credentialCache = cache;
  if (registered) return;
  new client.Gauge({
    name: 'vc_credential_cache_listening',
    help: 'Whether the token look-up cache listens for changes (1) and so keeps entries, or is bypassed (0)',
    registers: [registry],
    collect() {
      this.reset();
      if (credentialCache) this.set(credentialCache.listening ? 1 : 0);
    },
  });
  new client.Counter({
    name: 'vc_credential_cache_listen_losses_total',
    help: "Times the token look-up cache's LISTEN connection was lost (each one empties the cache)",
    registers: [registry],
    collect() {
      this.reset();
      if (credentialCache) this.inc(credentialCache.losses);
    },
  });
}

/** Observes every request (outermost, after the error handler has chosen the status). */
export function measureRequests(): Middleware {
  return async (ctx, next) => {
    const end = metrics.requestSeconds.startTimer();
    try {
      await next();
    } finally {
      const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      end({ method: ctx.method, route: String(route), status: String(ctx.status) });
      const code = (ctx.body as { error?: { code?: string } } | undefined)?.error?.code;
      if (ctx.status >= 400 && code) metrics.refusals.inc({ code, status: String(ctx.status) });
    }
  };
}
