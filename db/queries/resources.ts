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

/**
 * The SQL of one window, one statement: the window's epoch-aligned bins (date_bin), and for each the average
 * of its samples, read by a range scan of the primary key (index only: the values are INCLUDEd). Bins without
 * samples are left out. Binned this way nothing is sorted: a GROUP BY over date_bin sorts (or hashes) every
 * sample of the window, which on 90 days of minute samples costs more than the scan itself.
 */
export const SERIES_SQL = `
  WITH w AS (SELECT make_interval(secs => :step) AS step, now() - make_interval(secs => :window) AS since)
  SELECT b.bucket, s.cpu, s.memory, s.disk
    FROM w
   CROSS JOIN generate_series(date_bin(w.step, w.since, CAST('epoch' AS timestamptz)), now(), w.step) AS b(bucket)
   CROSS JOIN LATERAL (
         SELECT CAST(avg(r.cpu) AS float8) AS cpu, CAST(avg(r.memory_bytes) AS float8) AS memory,
                CAST(avg(r.disk_bytes) AS float8) AS disk, count(*) AS n
           FROM resource_samples r
          WHERE r.environment_id = :env AND r.at >= b.bucket AND r.at < b.bucket + w.step AND r.at > w.since) s
   WHERE s.n > 0
   ORDER BY b.bucket`;

/** The same statement with $1 (env), $2 (step), $3 (window) for a bare pg client (the benchmark's baseline). */
export const SERIES_SQL_POSITIONAL = SERIES_SQL.replace(/:env\b/g, '$1').replace(/:step\b/g, '$2').replace(/:window\b/g, '$3');

/** The environment's usage over the window, averaged per step (oldest first, bins with samples only). */
export async function resourceSeries(knex: Knex, environmentId: string, window: ResourceWindow): Promise<ResourceSeries> {
  const step = stepSeconds(window);
  const { rows } = await knex.raw(SERIES_SQL, { env: environmentId, step, window: WINDOW_SECONDS[window] });
  return toSeries(window, step, rows);
}

/** Rows of SERIES_SQL as the API answers them. */
export function toSeries(
  window: ResourceWindow,
  step: number,
  rows: Array<{ bucket: Date; cpu: number; memory: number; disk: number }>,
): ResourceSeries {
  const series: ResourceSeries['series'] = { cpu: [], memory: [], disk: [] };
  for (const r of rows) {
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
