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
const RESOURCE_RETENTION_DAYS = 90;
const MAX_POINTS = 500;

/** Windows of days are read from the hourly sums (migration 501), shorter ones from the minute samples. */
const HOURLY_WINDOWS: readonly ResourceWindow[] = ['7d', '30d', '90d'];

/**
 * Seconds each point averages: the window over 499 (so that, with bins aligned on the epoch and stable
 * between two calls, at most 500 meet the window), rounded up to whole minutes, or whole hours for windows
 * read from the hourly sums: 1h 60 s, 24h 180 s, 7d 1 h, 30d 2 h, 90d 5 h.
 */
export function stepSeconds(window: ResourceWindow): number {
  const unit = HOURLY_WINDOWS.includes(window) ? 3600 : 60;
  return Math.max(unit, Math.ceil(WINDOW_SECONDS[window] / (MAX_POINTS - 1) / unit) * unit);
}

interface Point {
  at: string;
  value: number;
}

interface ResourceSeries {
  window: ResourceWindow;
  step: number;
  series: { cpu: Point[]; memory: Point[]; disk: Point[] };
}

/** Minute samples averaged per bin: one range scan of the primary key (index only: the values are INCLUDEd). */
const MINUTE_SERIES_SQL = `
  SELECT date_bin(make_interval(secs => :step), at, TIMESTAMPTZ 'epoch') AS bucket,
         CAST(avg(cpu) AS float8) AS cpu, CAST(avg(memory_bytes) AS float8) AS memory, CAST(avg(disk_bytes) AS float8) AS disk
    FROM resource_samples
   WHERE environment_id = :env AND at > now() - make_interval(secs => :window)
   GROUP BY 1
   ORDER BY 1`;

/**
 * Hourly sums per bin, the average of every sample in it: at most 2,161 rows of the primary key for 90 days.
 * The hour the window starts in counts whole.
 */
const HOURLY_SERIES_SQL = `
  SELECT date_bin(make_interval(secs => :step), hour, TIMESTAMPTZ 'epoch') AS bucket,
         sum(cpu_sum) / sum(samples) AS cpu,
         CAST(sum(memory_sum) AS float8) / sum(samples) AS memory,
         CAST(sum(disk_sum) AS float8) / sum(samples) AS disk
    FROM resource_hourly
   WHERE environment_id = :env AND hour > now() - make_interval(secs => :window) - INTERVAL '1 hour'
   GROUP BY 1
   ORDER BY 1`;

/** The one statement a window is answered with. */
export function seriesSql(window: ResourceWindow): string {
  return HOURLY_WINDOWS.includes(window) ? HOURLY_SERIES_SQL : MINUTE_SERIES_SQL;
}

/** The same statement with $1 (env), $2 (step), $3 (window) for a bare pg client (the benchmark's baseline). */
export function positional(sql: string): string {
  return sql
    .replace(/:env\b/g, '$1')
    .replace(/:step\b/g, '$2')
    .replace(/:window\b/g, '$3');
}

/** The environment's usage over the window, averaged per step (oldest first, bins with samples only). */
export async function resourceSeries(
  knex: Knex,
  environmentId: string,
  window: ResourceWindow,
): Promise<ResourceSeries> {
  const step = stepSeconds(window);
  const { rows } = await knex.raw(seriesSql(window), { env: environmentId, step, window: WINDOW_SECONDS[window] });
  return toSeries(window, step, rows);
}

/** Rows of a series statement as the API answers them. */
function toSeries(
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
  /** The volume's own bytes (part of disk_bytes; the sampler always writes it). */
  volume_bytes?: number;
}

/**
 * The volume's bytes at the environment's last sample (written by the sampler of the host it runs on), or null
 * when it has no sample that says (never sampled, or sampled before volumes were counted apart).
 */
export async function lastVolumeBytes(knex: Knex, envId: string): Promise<number | null> {
  const row = await knex('resource_samples')
    .where({ environment_id: envId })
    .whereNotNull('volume_bytes')
    .orderBy('at', 'desc')
    .first('volume_bytes');
  return row?.volume_bytes == null ? null : Number(row.volume_bytes);
}

/** Writes one round of samples (a retried round writes nothing twice). */
export async function insertSamples(knex: Knex, rows: SampleRow[]): Promise<void> {
  if (rows.length === 0) return;
  await knex('resource_samples').insert(rows).onConflict(['environment_id', 'at']).ignore();
}

/** Deletes samples (and hourly sums) older than the retention, a batch at a time; returns how many samples went. */
export async function deleteOldSamples(knex: Knex, batch = 50_000): Promise<number> {
  // one transaction: a reader never sees the samples gone and their hours still there
  return knex.transaction(async (trx) => {
    const { rowCount } = await trx.raw(
      `DELETE FROM resource_samples WHERE ctid IN (
         SELECT ctid FROM resource_samples WHERE at < now() - make_interval(days => ?) LIMIT ?)`,
      [RESOURCE_RETENTION_DAYS, batch],
    );
    await trx.raw(`DELETE FROM resource_hourly WHERE hour < now() - make_interval(days => ?) - INTERVAL '1 hour'`, [
      RESOURCE_RETENTION_DAYS,
    ]);
    return (rowCount as number | null) ?? 0;
  });
}

/** The environments a host samples: those whose `web` server is placed on it, or on no host recorded. */
export async function environmentsSampledOn(knex: Knex, host: string): Promise<Array<{ id: string }>> {
  return knex({ e: 'environments' })
    .whereNotExists(
      knex('servers')
        .whereRaw('servers.environment_id = e.id')
        .where('servers.role', 'web')
        .whereNotNull('servers.host')
        .whereNot('servers.host', host),
    )
    .select('e.id');
}
