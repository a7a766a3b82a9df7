/**
 * Resource samples of environments (migration 500): the series GET /environments/{id}/resources answers,
 * shared by the API and the benchmark so that both measure the same SQL.
 */
import type { Knex } from 'knex';

export const RESOURCE_WINDOWS = ['1h', '24h', '7d', '30d', '90d'] as const;
export type ResourceWindow = (typeof RESOURCE_WINDOWS)[number];
export const WINDOW_SECONDS: Record<ResourceWindow, number> = {
  '1h': 3600,
  '24h': 86_400,
  '7d': 7 * 86_400,
  '30d': 30 * 86_400,
  '90d': 90 * 86_400,
};
/** Samples are kept this long (CONTRACT: three months), then deleted by the daily prune. */
export const RESOURCE_RETENTION_DAYS = 90;
export const MAX_POINTS = 500;

/**
 * Seconds each point averages: the window over 499, rounded up to whole minutes (a sample a minute), so
 * that buckets aligned on the epoch stay the same between two calls and at most 500 of them meet the window.
 */
export function stepSeconds(window: ResourceWindow): number {
  return Math.max(60, Math.ceil(WINDOW_SECONDS[window] / (MAX_POINTS - 1) / 60) * 60);
}

export interface Point {
  at: string;
  value: number;
}

export interface ResourceSeries {
  window: ResourceWindow;
  step: number;
  series: { cpu: Point[]; memory: Point[]; disk: Point[] };
}

/** The SQL of one window: one range scan of the primary key (index only), grouped into epoch-aligned bins. */
export const SERIES_SQL = `
  SELECT date_bin(make_interval(secs => $2), at, 'epoch'::timestamptz) AS bucket,
         avg(cpu)::float8 AS cpu, avg(memory_bytes)::float8 AS memory, avg(disk_bytes)::float8 AS disk
    FROM resource_samples
   WHERE environment_id = $1 AND at > now() - make_interval(secs => $3)
   GROUP BY 1
   ORDER BY 1`;

/** The environment's usage over the window, averaged per step (oldest first, buckets with samples only). */
export async function resourceSeries(knex: Knex, environmentId: string, window: ResourceWindow): Promise<ResourceSeries> {
  const step = stepSeconds(window);
  // knex.raw takes ? placeholders; the same statement as SERIES_SQL
  const sql = SERIES_SQL.replace(/\$\d/g, '?');
  const { rows } = await knex.raw(sql, [environmentId, step, WINDOW_SECONDS[window]]);
  const series: ResourceSeries['series'] = { cpu: [], memory: [], disk: [] };
  for (const r of rows as Array<{ bucket: Date; cpu: number; memory: number; disk: number }>) {
    const at = r.bucket.toISOString();
    series.cpu.push({ at, value: Math.round(r.cpu * 100) / 100 });
    series.memory.push({ at, value: Math.round(r.memory) });
    series.disk.push({ at, value: Math.round(r.disk) });
  }
  return { window, step, series };
}

export interface SampleRow {
  environment_id: string;
  at: Date;
  cpu: number;
  memory_bytes: number;
  disk_bytes: number;
}

/** Writes one round of samples (a retried round writes nothing twice). */
export async function insertSamples(knex: Knex, rows: SampleRow[]): Promise<void> {
  if (rows.length === 0) return;
  await knex('resource_samples').insert(rows).onConflict(['environment_id', 'at']).ignore();
}

/** Deletes samples older than the retention, a batch at a time; returns how many went. */
export async function deleteOldSamples(knex: Knex, batch = 50_000): Promise<number> {
  const { rowCount } = await knex.raw(
    `DELETE FROM resource_samples WHERE ctid IN (
       SELECT ctid FROM resource_samples WHERE at < now() - make_interval(days => ?) LIMIT ?)`,
    [RESOURCE_RETENTION_DAYS, batch],
  );
  return rowCount ?? 0;
}
