/**
 * Moving environments between hosts (migration 700, CONTRACT "Hosts"): what a drain, a lost host and an
 * evacuation read and write about hosts and the `web` servers placed on them. Times are the database's clock.
 */
import type { Knex } from 'knex';
import { lastVolumeBytes } from './resources';

type Db = Knex | Knex.Transaction;

const lostAfter = (knex: Db, lostSeconds: number) =>
  knex.raw('now() - make_interval(secs => ?::double precision)', [lostSeconds]);

/** An environment whose `web` server is placed on a host. */
export interface PlacedEnvironment {
  environment_id: string;
  team_id: string;
  project_id: string;
  name: string;
  server_id: string;
  server_status: string;
}

/** The environments of `web` servers with their team and project (a host's, or a lost host's, below). */
const placedEnvironments = (knex: Db) =>
  knex({ s: 'servers' })
    .join({ e: 'environments' }, 'e.id', 's.environment_id')
    .join({ p: 'projects' }, 'p.id', 'e.project_id')
    .where({ 's.role': 'web' })
    .select(
      's.environment_id',
      'p.team_id',
      'e.project_id',
      'e.name',
      { server_id: 's.id' },
      { server_status: 's.status' },
    );

/** The environments whose `web` server is placed on `host`, by name. */
export async function environmentsOnHost(knex: Db, host: string): Promise<PlacedEnvironment[]> {
  return placedEnvironments(knex).where({ 's.host': host }).orderBy('e.name');
}

/** Places the environment's `web` server on `host` (a move, or a failed move put back). */
export async function setWebPlacement(knex: Db, environmentId: string, host: string | null): Promise<void> {
  await knex('servers')
    .where({ environment_id: environmentId, role: 'web' })
    .update({ host, updated_at: knex.fn.now() });
}

/** The `web` server's status: `host_lost` (its host is lost and its volume held data), or `running` again. */
export async function setWebStatus(knex: Db, environmentId: string, status: 'running' | 'host_lost'): Promise<void> {
  await knex('servers')
    .where({ environment_id: environmentId, role: 'web' })
    .whereIn('status', ['running', 'host_lost'])
    .update({ status, updated_at: knex.fn.now() });
}

/**
 * Whether the environment's volume held anything at its last usage sample that recorded it
 * (resource_samples.volume_bytes); null when no sample says.
 */
export async function volumeHeldAtLastSample(knex: Knex, environmentId: string): Promise<boolean | null> {
  const bytes = await lastVolumeBytes(knex, environmentId);
  return bytes === null ? null : bytes > 0;
}

/**
 * Takes the lost hosts (heartbeat older than `lostSeconds`) that have environments placed on them and were not
 * taken yet: each is `drained` and its `lost_at` set, once per loss (a concurrent sweep takes none twice).
 */
export async function takeLostHosts(knex: Db, lostSeconds: number, sweeper: string): Promise<string[]> {
  // The sweeper's own host is alive (it runs this); and while its own heartbeat is stale too, the database or
  // the clock was away for everyone: nobody is taken as lost until the sweeper's heartbeat is fresh again.
  const { rows } = await knex.raw(
    `UPDATE hosts h SET lost_at = now(), status = 'drained'
      WHERE h.lost_at IS NULL AND h.heartbeat_at < :after AND h.name <> :sweeper
        AND EXISTS (SELECT 1 FROM servers s WHERE s.host = h.name AND s.role = 'web')
        AND EXISTS (SELECT 1 FROM hosts o WHERE o.name = :sweeper AND o.heartbeat_at >= :after)
      RETURNING h.name`,
    { after: lostAfter(knex, lostSeconds), sweeper },
  );
  return rows.map((r: { name: string }) => r.name);
}

/**
 * The environments still to handle on hosts taken as lost (and still lost): their `web` server is placed there
 * and `running` (not yet moved, nor marked `host_lost`). Asked again every round: a move refused now (another
 * change runs) is started by a later one.
 */
export async function environmentsOnLostHosts(knex: Db, lostSeconds: number): Promise<PlacedEnvironment[]> {
  return placedEnvironments(knex)
    .join({ h: 'hosts' }, 'h.name', 's.host')
    .where({ 's.status': 'running' })
    .whereNotNull('h.lost_at')
    .where('h.heartbeat_at', '<', lostAfter(knex, lostSeconds))
    .orderBy(['h.name', 'e.name'])
    .select({ host: 'h.name' });
}

/** Hosts taken as lost whose heartbeat is fresh again: they rejoined (their stale instances are to stop). */
export async function rejoinedHosts(knex: Db, lostSeconds: number): Promise<string[]> {
  const rows = await knex('hosts')
    .whereNotNull('lost_at')
    .where('heartbeat_at', '>=', lostAfter(knex, lostSeconds))
    .orderBy('name')
    .select('name');
  return rows.map((r: { name: string }) => r.name);
}

/** A rejoined host's stale instances are stopped: it stays `drained` until the operator undrains it. */
export async function clearHostLoss(knex: Db, name: string): Promise<void> {
  await knex('hosts').where({ name }).update({ lost_at: null });
}

/**
 * Draining hosts with no environment left become `drained`; their names. A move places the environment on its
 * new host before it starts there: while any move is pending or running, no drain is taken as finished.
 */
export async function finishDrains(knex: Db): Promise<string[]> {
  const { rows } = await knex.raw(
    `UPDATE hosts h SET status = 'drained'
      WHERE h.status = 'draining'
        AND NOT EXISTS (SELECT 1 FROM servers s WHERE s.host = h.name AND s.role = 'web')
        AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.type = 'move' AND t.status IN ('pending', 'running'))
      RETURNING h.name`,
  );
  return rows.map((r: { name: string }) => r.name);
}

/** Environments whose `web` server is placed on another host than `host` (a rejoining host stops them). */
export async function environmentsPlacedElsewhere(knex: Db, host: string): Promise<string[]> {
  const rows = await knex('servers')
    .where({ role: 'web' })
    .whereNotNull('host')
    .whereNot({ host })
    .select('environment_id');
  return rows.map((r: { environment_id: string }) => r.environment_id);
}

/**
 * Whether the environment's `web` server is on `host`. No web server, or no host recorded (placed before hosts
 * existed): nothing says it is elsewhere, so true.
 */
export async function placedOn(knex: Db, environmentId: string, host: string): Promise<boolean> {
  const row = await knex('servers').where({ environment_id: environmentId, role: 'web' }).first('host');
  return !row?.host || row.host === host;
}

/** The newest snapshot an evacuation would restore: available, its destination still there, not failed a verify. */
export async function newestReadableSnapshot(
  knex: Db,
  environmentId: string,
): Promise<{ id: string; finished_at: Date; age_seconds: number } | null> {
  const row = await knex({ b: 'backups' })
    .join({ d: 'backup_destinations' }, 'd.id', 'b.destination_id')
    .where({ 'b.environment_id': environmentId, 'b.status': 'available' })
    .whereNull('b.verify_error')
    .orderBy('b.finished_at', 'desc')
    .first(
      'b.id',
      'b.finished_at',
      knex.raw('extract(epoch from now() - coalesce(b.finished_at, b.created_at))::float8 AS age_seconds'),
    );
  return row ? { id: row.id, finished_at: row.finished_at, age_seconds: Number(row.age_seconds) } : null;
}

/** The e-mail addresses of the team's owners and admins (an evacuation tells them what was lost). */
export async function teamAdminEmails(knex: Db, teamId: string): Promise<string[]> {
  const rows = await knex({ m: 'memberships' })
    .join({ u: 'users' }, 'u.id', 'm.user_id')
    .where('m.team_id', teamId)
    .whereIn('m.role', ['owner', 'admin'])
    .orderBy('u.email')
    .select('u.email');
  return rows.map((r: { email: string }) => r.email);
}

/** What an evacuation's e-mail names: the environment, its project and team, and when its snapshot was taken. */
export async function evacuationFacts(
  knex: Db,
  environmentId: string,
  backupId: string,
): Promise<{ team_id: string; project: string; environment: string; snapshot_at: Date } | undefined> {
  return knex({ e: 'environments' })
    .join({ p: 'projects' }, 'p.id', 'e.project_id')
    .join({ b: 'backups' }, 'b.environment_id', 'e.id')
    .where({ 'e.id': environmentId, 'b.id': backupId })
    .first(
      'p.team_id',
      { project: 'p.name' },
      { environment: 'e.name' },
      { snapshot_at: knex.raw('coalesce(b.finished_at, b.created_at)') },
    );
}
