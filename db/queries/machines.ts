/** What the machines of an environment are: read by the API, limited by the provider's activities, placed by core. */
import type { Knex } from 'knex';

export interface Size {
  cpu: number;
  memoryMb: number;
  /** The plan's id (its `max_processes` is read from the price list). */
  plan?: string;
}

/**
 * A plan's `max_processes` when the price list does not set it: 512 per started 512 MB of memory, at least
 * 512 (CONTRACT "Machines": at most 512 on the smallest plan). Processes and threads both count.
 */
export function defaultMaxProcesses(memoryMb: number): number {
  return 512 * Math.max(1, Math.ceil(memoryMb / 512));
}

/** numeric columns come back from pg as strings */
const size = (row: { cpu: string | number; memory_mb: number; plan?: string }): Size => ({
  cpu: Number(row.cpu),
  memoryMb: row.memory_mb,
  ...(row.plan ? { plan: row.plan } : {}),
});

/** The size of the environment's web server (its processes' limits), or null when it has none. */
export async function webServerSize(knex: Knex, environmentId: string): Promise<Size | null> {
  const row = await knex('servers')
    .where({ environment_id: environmentId, role: 'web' })
    .first('cpu', 'memory_mb', 'plan');
  return row ? size(row) : null;
}

/** The size builds of the environment run with (its build machine's plan), or null when it has none. */
export async function buildMachineSize(knex: Knex, environmentId: string): Promise<Size | null> {
  const row = await knex('build_machines').where({ environment_id: environmentId }).first('cpu', 'memory_mb', 'plan');
  return row ? size(row) : null;
}

/** How many web instances the environment's `web` server runs (1 without a server). */
export async function webServerInstances(knex: Knex, environmentId: string): Promise<number> {
  const row = await knex('servers').where({ environment_id: environmentId, role: 'web' }).first('instances');
  return row?.instances ?? 1;
}

/** The ids of the environment's servers, oldest first (the log settings' machines). */
export async function environmentServerIds(knex: Knex, environmentId: string): Promise<Array<{ id: string }>> {
  return knex('servers').where({ environment_id: environmentId }).orderBy('created_at').select('id');
}

/**
 * Records the server placed on `host` away from a lost one (core/placement.ts, in its placement's transaction):
 * no longer `host_lost` either, since the deploy starts it there.
 */
export async function moveServerFromLostHost(trx: Knex.Transaction, serverId: string, host: string): Promise<void> {
  await trx('servers')
    .where({ id: serverId })
    .update({
      host,
      status: trx.raw("CASE WHEN status = 'host_lost' THEN 'running' ELSE status END"),
      updated_at: trx.fn.now(),
    });
}

/** Records the server placed on `host` (a move, core/placement.ts, in its placement's transaction). */
export async function setServerHost(trx: Knex.Transaction, serverId: string, host: string): Promise<void> {
  await trx('servers').where({ id: serverId }).update({ host, updated_at: trx.fn.now() });
}

/** The environment's `web` server, with whether its host is lost (false: alive, or none recorded) (core/placement.ts). */
export async function webServerToPlace(
  trx: Knex.Transaction,
  environmentId: string,
  lostSeconds: number,
): Promise<{ id: string; host: string | null; memory_mb: number; instances: number; lost: boolean } | undefined> {
  return trx({ s: 'servers' })
    .leftJoin({ h: 'hosts' }, 'h.name', 's.host')
    .where({ 's.environment_id': environmentId, 's.role': 'web' })
    .first(
      's.id',
      's.host',
      's.memory_mb',
      's.instances',
      trx.raw('coalesce(h.heartbeat_at < now() - make_interval(secs => ?::double precision), false) AS lost', [
        lostSeconds,
      ]),
    );
}

/** A web server's crash record (servers.crash; migration 770): its live processes keep exiting. */
export interface WebCrash {
  /** When the first exit of this run of exits was seen. */
  since: string;
  exit_code: number | null;
  signal: string | null;
  /** Exits since `since`, over every instance. */
  exits: number;
  last_exit_at: string;
}

/**
 * Sets (or clears, with null) the crash record of the environment's `web` server, by the host that runs it: a host
 * the environment has left does not write it. `began`: the server had no record before this one (a run of exits
 * begins), with its team and project. A record already as given is not written again (each worker's first report of an
 * environment is a null, most often over a null).
 */
export async function setWebCrash(
  knex: Knex,
  environmentId: string,
  host: string,
  crash: WebCrash | null,
): Promise<{ began: false } | { began: true; teamId: string; projectId: string }> {
  const { rows } = await knex.raw(
    `WITH old AS (
       SELECT id, crash FROM servers
        WHERE environment_id = ? AND role = 'web' AND (host = ? OR host IS NULL)
        FOR UPDATE
     )
     UPDATE servers s SET crash = new.crash FROM old, (SELECT ?::jsonb AS crash) new
      WHERE s.id = old.id AND old.crash IS DISTINCT FROM new.crash
     RETURNING old.crash IS NULL AS was_clear, s.team_id, s.project_id`,
    [environmentId, host, crash === null ? null : JSON.stringify(crash)],
  );
  const row = rows[0] as { was_clear: boolean; team_id: string; project_id: string } | undefined;
  return crash && row?.was_clear ? { began: true, teamId: row.team_id, projectId: row.project_id } : { began: false };
}
