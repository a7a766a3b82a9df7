/**
 * The CDN's data, shared by the API (settings), the `cdn_clear` activities (purges) and the edge (which
 * reads settings and purges, and reports which purge it has applied in `edge_instances`).
 */
import type { Knex } from 'knex';

const CDN_DEFAULTS = { enabled: false, default_ttl_seconds: 3600 };

/** An edge that has not checked in for this long is gone (killed): it has no cache a purge must wait for. */
export const EDGE_GONE_SECONDS = 15;

export interface CdnSettings {
  enabled: boolean;
  default_ttl_seconds: number;
}

export async function getCdnSettings(knex: Knex, environmentId: string): Promise<CdnSettings> {
  const row = await knex('environment_cdns').where({ environment_id: environmentId }).first();
  return row ? { enabled: row.enabled, default_ttl_seconds: row.default_ttl_seconds } : { ...CDN_DEFAULTS };
}

export async function saveCdnSettings(
  knex: Knex,
  environmentId: string,
  patch: Partial<CdnSettings>,
): Promise<CdnSettings> {
  const [row] = await knex('environment_cdns')
    .insert({ environment_id: environmentId, ...CDN_DEFAULTS, ...patch, updated_at: knex.fn.now() })
    .onConflict('environment_id')
    .merge({ ...patch, updated_at: knex.fn.now() })
    .returning('*');
  return { enabled: row.enabled, default_ttl_seconds: row.default_ttl_seconds };
}

interface CdnPurge {
  id: number;
  environment_id: string;
  prefixes: string[];
}

/** Records the task's purge once (a retried activity finds the one it made). */
export async function recordCdnPurge(
  knex: Knex,
  p: { taskId: string; environmentId: string; prefixes: string[] },
): Promise<number> {
  const [row] = await knex('cdn_purges')
    .insert({ task_id: p.taskId, environment_id: p.environmentId, prefixes: JSON.stringify(p.prefixes) })
    .onConflict('task_id')
    .merge({ task_id: p.taskId })
    .returning('id');
  return Number(row.id);
}

export async function purgesAfter(knex: Knex, seq: number): Promise<CdnPurge[]> {
  const rows = await knex('cdn_purges').where('id', '>', seq).orderBy('id').select('id', 'environment_id', 'prefixes');
  return rows.map((r: { id: string; environment_id: string; prefixes: string[] }) => ({ ...r, id: Number(r.id) }));
}

export async function lastPurgeSeq(knex: Knex): Promise<number> {
  const row = await knex('cdn_purges').max('id as max').first();
  return Number(row?.max ?? 0);
}

/** The live edges (checked in lately) that have not applied purge `seq` yet. */
export async function edgesBehind(knex: Knex, seq: number): Promise<string[]> {
  const rows = await knex('edge_instances')
    .where('purge_seq', '<', seq)
    .where('seen_at', '>', knex.raw(`now() - interval '${EDGE_GONE_SECONDS} seconds'`))
    .select('id');
  return rows.map((r: { id: string }) => r.id);
}

/**
 * An edge's row, made or carried on (one per data plane: edge/edge-id.ts). `applied_at` is kept: until this
 * control plane applies a state of its own, the row counts as serving what it last applied.
 */
export async function registerEdge(knex: Knex, id: string, seq: number, name: string | null = null): Promise<void> {
  // Rows of edges killed long ago go (their process is gone, and so is their cache).
  await knex('edge_instances').where('seen_at', '<', knex.raw("now() - interval '1 day'")).delete();
  await knex('edge_instances')
    .insert({ id, purge_seq: seq, name })
    .onConflict('id')
    .merge({ purge_seq: seq, name, seen_at: knex.fn.now() });
}

export async function edgeCheckedIn(knex: Knex, id: string, seq: number): Promise<void> {
  await knex('edge_instances')
    .insert({ id, purge_seq: seq, seen_at: knex.fn.now() })
    .onConflict('id')
    .merge({ purge_seq: seq, seen_at: knex.fn.now() });
}

export async function unregisterEdge(knex: Knex, id: string): Promise<void> {
  await knex('edge_instances').where({ id }).delete();
}
