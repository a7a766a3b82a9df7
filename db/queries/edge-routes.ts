/**
 * `edge_routes`: where each environment's web process answers, written by the supervisor (through the
 * worker's publish hook) and read by the edge. The table's trigger announces each change on `vc_edge`.
 */
import type { Knex } from 'knex';
import { EDGE_GONE_SECONDS } from './cdn';

/**
 * Where an environment is served, as the supervisor publishes it (the shape of its PublishedRoute,
 * host/provider/supervisor-types.ts, declared here so that db/ imports nothing above it).
 */
export type PublishedRoute =
  | {
      kind: 'upstream';
      host: string;
      port: number;
      releaseId: string;
      upstreams: Array<{ id: string; host: string; port: number }>;
    }
  | { kind: 'unavailable'; text: string; releaseId: string | null };

export async function publishEdgeRoute(knex: Knex, envId: string, route: PublishedRoute | null): Promise<void> {
  if (!route) {
    await knex('edge_routes').where({ environment_id: envId }).delete();
    return;
  }
  const env = await knex('environments').where({ id: envId }).first('id');
  if (!env) return; // deleted meanwhile
  const row =
    route.kind === 'upstream'
      ? {
          upstream_host: route.host,
          upstream_port: route.port,
          upstreams: JSON.stringify(route.upstreams),
          unavailable: null,
          release_id: route.releaseId,
        }
      : {
          upstream_host: null,
          upstream_port: null,
          upstreams: null,
          unavailable: route.text,
          release_id: route.releaseId,
        };
  await knex('edge_routes')
    .insert({ environment_id: envId, ...row, updated_at: knex.fn.now() })
    .onConflict('environment_id')
    .merge();
}

export interface EdgeRouteRow {
  environment_id: string;
  upstream_host: string | null;
  upstream_port: number | null;
  upstreams: { id: string; host: string; port: number }[] | null;
  unavailable: string | null;
}

/** The edge `id` now serves the state read at `readAt` (the database clock before it read it). */
export async function edgeApplied(knex: Knex, id: string, readAt: Date): Promise<void> {
  await knex('edge_instances').where({ id }).update({ applied_at: readAt, seen_at: knex.fn.now() });
}

/** The channel the edges LISTEN on (the triggers on what they read notify it too). */
export const EDGE_CHANNEL = 'vc_edge';

const EDGE_SESSION_PREFIX = 'vc-edge:';
/** An edge whose LISTEN session dropped is still waited for this long (it reconnects within a second or so). */
const EDGE_RECONNECT_SECONDS = 3;
/** The application_name of an edge's LISTEN session (pg_stat_activity): how awaitEdges tells it is alive. */
export const edgeSessionName = (edgeId: string) => `${EDGE_SESSION_PREFIX}${edgeId}`;

/**
 * Waits until every live edge (checked in within EDGE_GONE_SECONDS, and holding its LISTEN session) serves a
 * state read after now (the database clock, after the caller's change committed): at most `timeoutMs`, then
 * false (an edge that is away does not hold a deploy for long; it reads everything when it comes back).
 */
export async function awaitEdges(knex: Knex, timeoutMs = 15_000): Promise<boolean> {
  const { rows } = await knex.raw('SELECT now() AS at');
  const since: Date = rows[0].at;
  // An edge may have read the change (its notification) and checked in just BEFORE `since`: asked to read
  // again, it checks in after it, without waiting for an unrelated change (or the timeout).
  await knex.raw(`NOTIFY ${EDGE_CHANNEL}`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const behind = await knex('edge_instances')
      .where('seen_at', '>', knex.raw(`now() - interval '${EDGE_GONE_SECONDS} seconds'`))
      // a live edge holds its LISTEN session (edgeSessionName); one that lost it a moment ago reconnects
      .where((q) =>
        q
          .whereExists(
            knex
              .select(knex.raw('1'))
              .from('pg_stat_activity')
              .whereRaw(`application_name = ? || edge_instances.id::text`, [EDGE_SESSION_PREFIX]),
          )
          .orWhere('seen_at', '>', knex.raw(`now() - interval '${EDGE_RECONNECT_SECONDS} seconds'`)),
      )
      .where((q) => q.whereNull('applied_at').orWhere('applied_at', '<', since))
      .first('id');
    if (!behind) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
}
