/**
 * `edge_routes`: where each environment's web process answers, written by the supervisor (through the
 * worker's publish hook) and read by the edge. The table's trigger announces each change on `vc_edge`.
 */
import type { Knex } from 'knex';

/**
 * Where an environment is served, as the supervisor publishes it (the shape of its PublishedRoute,
 * host/provider/supervisor-types.ts, declared here so that db/ imports nothing above it).
 */
type PublishedRoute =
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

/**
 * The edge `id` now serves the state read at `readAt` (the database clock before it read it), on every port of
 * ENVIRONMENT_PORTS but `heldPorts` (another program on its host holds them).
 */
export async function edgeApplied(knex: Knex, id: string, readAt: Date, heldPorts: number[]): Promise<void> {
  await knex('edge_instances')
    .where({ id })
    .update({ applied_at: readAt, seen_at: knex.fn.now(), held_ports: [...heldPorts].sort((a, b) => a - b) });
}

/** An `edge_instances` row's condition: it cannot listen on the port bound to `?`. */
const HOLDS_OUT = '? = ANY(held_ports)';

/**
 * The edges that cannot listen on `port` (an SQL expression: a column, `p` of a series) because another program on
 * their host holds it: a subquery for WHERE NOT EXISTS (a new environment is never given such a port).
 */
export function edgesHoldingOut(knex: Knex, port: Knex.Raw): Knex.QueryBuilder {
  return knex('edge_instances').whereRaw(HOLDS_OUT, [port]);
}

/** The channel the edges LISTEN on (the triggers on what they read notify it too). */
export const EDGE_CHANNEL = 'vc_edge';

const EDGE_SESSION_PREFIX = 'vc-edge:';
/** The application_name of an edge's LISTEN session (pg_stat_activity): which edge holds it, for operators. */
export const edgeSessionName = (edgeId: string) => `${EDGE_SESSION_PREFIX}${edgeId}`;

/** An edge that has not applied a state read after a change yet. */
interface EdgeBehind {
  id: string;
  /** host:DATA_DIR of its data plane (null: a row from before names were kept). */
  name: string | null;
  /** When it last applied a state (null: never). */
  applied_at: Date | null;
  /** The environment's port, when the edge applied the change but cannot listen on it (another program holds it). */
  held: number | null;
}

/** How an edge is named in a task's log or an error: its host and DATA_DIR, else its id. */
export const edgeLabel = (e: EdgeBehind) => (e.name ? `${e.name} (${e.id})` : e.id);

/** The database clock now: a state read after it holds every change committed before. */
async function databaseNow(knex: Knex): Promise<Date> {
  const { rows } = await knex.raw('SELECT now() AS at');
  return rows[0].at;
}

/**
 * The edges that have not applied a state read after `since`. Every row counts: a row is one data plane
 * (an HAProxy serving), deleted only once that HAProxy has stopped (edge/server.ts `close`, npm start's stop).
 * A row whose control plane vanished (SIGKILLed) has an HAProxy serving what it last applied, so it counts as
 * behind until a control plane adopts that HAProxy and applies a newer state.
 */
async function edgesBehind(knex: Knex, since: Date, port: number | null): Promise<EdgeBehind[]> {
  const rows: Array<Omit<EdgeBehind, 'held'> & { held_ports: number[] }> = await knex('edge_instances')
    .where((q) => {
      q.whereNull('applied_at').orWhere('applied_at', '<', since);
      if (port !== null) q.orWhereRaw(HOLDS_OUT, [port]);
    })
    .orderBy('id')
    .select('id', 'name', 'applied_at', 'held_ports');
  return rows.map(({ held_ports, ...r }) => ({
    ...r,
    held: port !== null && r.applied_at !== null && r.applied_at >= since && held_ports.includes(port) ? port : null,
  }));
}

/**
 * Waits until every edge serves a state read after now (the database clock, after the caller's change
 * committed), at most `timeoutMs`. Returns the edges still behind then (none: the change is in force).
 * `waiting` is told once which edges it waits for, when one is not there at once. With `environmentId`, an edge
 * that cannot listen on that environment's port (another program on its host holds it) is behind until it can.
 */
export async function awaitEdges(
  knex: Knex,
  timeoutMs = 15_000,
  waiting?: (behind: EdgeBehind[]) => void,
  environmentId?: string,
): Promise<EdgeBehind[]> {
  const port = environmentId
    ? (((await knex('environments').where({ id: environmentId }).first('port')) as { port: number } | undefined)
        ?.port ?? null)
    : null;
  const since = await databaseNow(knex);
  // An edge may have read the change (its notification) and checked in just BEFORE `since`: asked to read
  // again, it checks in after it, without waiting for an unrelated change (or the timeout).
  await knex.raw(`NOTIFY ${EDGE_CHANNEL}`);
  const deadline = Date.now() + timeoutMs;
  let told = false;
  for (let round = 0; ; round++) {
    const behind = await edgesBehind(knex, since, port);
    if (behind.length === 0 || Date.now() > deadline) return behind;
    // not at once: an edge's apply takes milliseconds, a reload a second or so
    if (!told && waiting && round === 40) {
      told = true;
      waiting(behind);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}
