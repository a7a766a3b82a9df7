/**
 * The host registry (migration 670, CONTRACT "Hosts"). A host's `lost` status is computed here, never stored:
 * a host whose heartbeat is older than HOST_LOST_SECONDS reads as `lost` whatever its stored status, so that
 * the agent's refusal of a second one, `npm run hosts -- list`, /health and /metrics agree. Times are the
 * database's clock (`now()`), never a process's.
 */
import type { Knex } from 'knex';

/** What is stored; `lost` is derived from the heartbeat. */
const STORED_HOST_STATUSES = ['ready', 'draining', 'drained'] as const;
const HOST_STATUSES = [...STORED_HOST_STATUSES, 'lost'] as const;
type StoredHostStatus = (typeof STORED_HOST_STATUSES)[number];
type HostStatus = (typeof HOST_STATUSES)[number];

/** A row of `hosts` as stored. */
interface HostRow {
  name: string;
  address: string;
  status: StoredHostStatus;
  cpu: string | number;
  memory_mb: number;
  disk_gb: number;
  storage_roots: string[];
  instance_ports_from: number;
  instance_ports_to: number;
  instance_token: string;
  encryption_key_id: string | null;
  started_at: Date;
  heartbeat_at: Date;
  created_at: Date;
}

interface HostCapacity {
  cpu: number;
  memory_mb: number;
  disk_gb: number;
}

/** A host as operators see it (`npm run hosts -- list --json`, /metrics). */
export interface Host {
  name: string;
  address: string;
  status: HostStatus;
  capacity: HostCapacity;
  /** What the servers placed on it take (a web server's size times its instances). */
  used: HostCapacity;
  /**
   * Memory held beyond `used` for the open resizes and scales of its web servers (they apply their size at their
   * end): placement counts it as taken.
   */
  held: { memory_mb: number };
  /** Environments with a server placed on it. */
  environments: number;
  storage_roots: string[];
  instance_ports: { from: number; to: number };
  /** The id of the encryption key its agent loaded at its start (null: an agent from before the column). */
  encryption_key_id: string | null;
  started_at: string;
  heartbeat_at: string;
}

/** What an agent registers. */
interface HostRegistration {
  name: string;
  address: string;
  capacity: HostCapacity;
  storageRoots: string[];
  instancePorts: { from: number; to: number };
  /** The agent's token (kept in its DATA_DIR): the same agent restarted takes its row again. */
  token: string;
  /** The id of the encryption key the agent seals under (`npm run keys -- reseal` waits for every host to have it). */
  encryptionKeyId?: string | null;
}

const lostAfter = (knex: Knex, lostSeconds: number) =>
  knex.raw('now() - make_interval(secs => ?::double precision)', [lostSeconds]);

/**
 * Takes the name for this agent: a new name, the same agent again (its token), or a name whose holder is lost
 * (no heartbeat for `lostSeconds`). Another agent whose heartbeat is fresh keeps it: `{ claimed: false }` with
 * its heartbeat's age. The stored status is kept (a draining host stays draining across a restart).
 */
export async function claimHost(
  knex: Knex,
  reg: HostRegistration,
  lostSeconds: number,
): Promise<{ claimed: true } | { claimed: false; heartbeatAgeSeconds: number }> {
  const { rows } = await knex.raw(
    `INSERT INTO hosts AS h (name, address, cpu, memory_mb, disk_gb, storage_roots, instance_ports_from,
                             instance_ports_to, instance_token, encryption_key_id, started_at, heartbeat_at)
     VALUES (?, ?, ?, ?, ?, ?::text[], ?, ?, ?, ?, now(), now())
     ON CONFLICT (name) DO UPDATE SET
       address = excluded.address, cpu = excluded.cpu, memory_mb = excluded.memory_mb, disk_gb = excluded.disk_gb,
       storage_roots = excluded.storage_roots, instance_ports_from = excluded.instance_ports_from,
       instance_ports_to = excluded.instance_ports_to, instance_token = excluded.instance_token,
       encryption_key_id = excluded.encryption_key_id, started_at = now(), heartbeat_at = now()
     WHERE h.instance_token = excluded.instance_token OR h.heartbeat_at < ?
     RETURNING name`,
    [
      reg.name,
      reg.address,
      reg.capacity.cpu,
      reg.capacity.memory_mb,
      reg.capacity.disk_gb,
      reg.storageRoots,
      reg.instancePorts.from,
      reg.instancePorts.to,
      reg.token,
      reg.encryptionKeyId ?? null,
      lostAfter(knex, lostSeconds),
    ],
  );
  if (rows.length > 0) return { claimed: true };
  const held = await knex('hosts')
    .where({ name: reg.name })
    .first(knex.raw('extract(epoch from now() - heartbeat_at)::float8 as age'));
  return { claimed: false, heartbeatAgeSeconds: Math.max(0, Number(held?.age ?? 0)) };
}

/** Marks `name` as the host whose machine runs the services server (npm start's own; at most one). */
export async function markServicesHost(knex: Knex, name: string): Promise<void> {
  await knex.transaction(async (trx) => {
    await trx('hosts').whereNot({ name }).where({ runs_services: true }).update({ runs_services: false });
    await trx('hosts').where({ name }).update({ runs_services: true });
  });
}

/** The host whose machine runs the services server, or null when none registered as such. */
export async function servicesHost(knex: Knex): Promise<string | null> {
  const row = await knex('hosts').where({ runs_services: true }).first('name');
  return row?.name ?? null;
}

/** The agent's heartbeat: false when its row is no longer its own (another agent took the name). */
export async function hostHeartbeat(knex: Knex, name: string, token: string): Promise<boolean> {
  const n = await knex('hosts').where({ name, instance_token: token }).update({ heartbeat_at: knex.fn.now() });
  return n > 0;
}

/** The status as read: `lost` when the heartbeat is older than `lostSeconds`, else the stored one. */
const statusSql = (knex: Knex, lostSeconds: number) =>
  knex.raw(`CASE WHEN h.heartbeat_at < ? THEN 'lost' ELSE h.status END AS status`, [lostAfter(knex, lostSeconds)]);

/** Every host by name, with its status, capacity, what its servers use and its environments. */
export async function listHosts(knex: Knex, lostSeconds: number): Promise<Host[]> {
  const used = knex('servers')
    .whereNotNull('host')
    .groupBy('host')
    .select(
      'host',
      knex.raw('sum(cpu * instances)::float8 AS cpu'),
      knex.raw('sum(memory_mb * instances)::int AS memory_mb'),
      knex.raw('sum(disk_gb)::int AS disk_gb'),
      knex.raw('count(DISTINCT environment_id)::int AS environments'),
    )
    .as('u');
  const held = knex({ s: 'servers' })
    .join(openGrowth(knex), 'g.server_id', knex.raw('s.id::text'))
    .where('s.role', 'web')
    .whereNotNull('s.host')
    .groupBy('s.host')
    .select('s.host', knex.raw(`sum(${GROWN} - s.memory_mb * s.instances)::int AS memory_mb`))
    .as('r');
  const rows = await knex({ h: 'hosts' })
    .leftJoin(used, 'u.host', 'h.name')
    .leftJoin(held, 'r.host', 'h.name')
    .orderBy('h.name')
    .select(
      'h.*',
      statusSql(knex, lostSeconds),
      knex.raw('coalesce(u.cpu, 0) AS used_cpu'),
      knex.raw('coalesce(u.memory_mb, 0) AS used_memory_mb'),
      knex.raw('coalesce(u.disk_gb, 0) AS used_disk_gb'),
      knex.raw('coalesce(u.environments, 0) AS environments'),
      knex.raw('coalesce(r.memory_mb, 0) AS held_memory_mb'),
    );
  return rows.map(
    (
      r: HostRow & {
        used_cpu: number;
        used_memory_mb: number;
        used_disk_gb: number;
        environments: number;
        held_memory_mb: number;
      },
    ) => ({
      name: r.name,
      address: r.address,
      status: r.status as HostStatus,
      capacity: { cpu: Number(r.cpu), memory_mb: r.memory_mb, disk_gb: r.disk_gb },
      used: { cpu: Number(r.used_cpu), memory_mb: Number(r.used_memory_mb), disk_gb: Number(r.used_disk_gb) },
      held: { memory_mb: Number(r.held_memory_mb) },
      environments: Number(r.environments),
      storage_roots: r.storage_roots,
      instance_ports: { from: r.instance_ports_from, to: r.instance_ports_to },
      encryption_key_id: r.encryption_key_id ?? null,
      started_at: new Date(r.started_at).toISOString(),
      heartbeat_at: new Date(r.heartbeat_at).toISOString(),
    }),
  );
}

/** How many hosts have each status (every status present, 0 when none). */
export async function hostCounts(knex: Knex, lostSeconds: number): Promise<Record<HostStatus, number>> {
  const rows: Array<{ status: HostStatus; n: number }> = await knex
    .from(knex({ h: 'hosts' }).select(statusSql(knex, lostSeconds)).as('s'))
    .groupBy('status')
    .select('status', knex.raw('count(*)::int AS n'));
  const counts = Object.fromEntries(HOST_STATUSES.map((s) => [s, 0])) as Record<HostStatus, number>;
  for (const r of rows) counts[r.status] = Number(r.n);
  return counts;
}

/** Sets a host's stored status; false when no host has that name. */
export async function setHostStatus(knex: Knex, name: string, status: StoredHostStatus): Promise<boolean> {
  return (await knex('hosts').where({ name }).update({ status })) > 0;
}

/**
 * The size in all (MB, instances) that each open (pending or running) resize or scale asks for its server, by
 * server id; `exceptServer`: that server's own task is left out (it is refused as in progress elsewhere).
 */
const openGrowth = (knex: Knex, exceptServer?: string) => {
  const q = knex('tasks')
    .whereIn('status', ['pending', 'running'])
    .whereIn('type', ['resize', 'scale'])
    .groupByRaw("params->>'server_id'")
    .select(
      knex.raw("params->>'server_id' AS server_id"),
      knex.raw("max((params->>'memory_mb')::int) AS memory_mb"),
      knex.raw("max((params->>'instances')::int) AS instances"),
    );
  if (exceptServer) q.whereRaw("params->>'server_id' <> ?", [exceptServer]);
  return q.as('g');
};

/** A web server's memory in all (MB) at the larger of its size and the one its open task asks for (`g`, openGrowth). */
const GROWN = 'greatest(s.memory_mb, coalesce(g.memory_mb, 0)) * greatest(s.instances, coalesce(g.instances, 0))';

/**
 * Memory a host's placed web servers take (each instance its size), by host name. A server that an open resize or
 * scale grows counts at its new size: the task applies it at its end, and until then the room it was granted is
 * held for it (two asked one after the other never both take the last room).
 */
const webMemoryUsed = (knex: Knex, exceptServer?: string) =>
  knex({ s: 'servers' })
    .leftJoin(openGrowth(knex, exceptServer), 'g.server_id', knex.raw('s.id::text'))
    .where('s.role', 'web')
    .whereNotNull('s.host')
    .groupBy('s.host')
    .select('s.host', knex.raw(`sum(${GROWN})::int AS used`))
    .as('u');

/**
 * The hosts open to placement (stored `ready`, heartbeat younger than `lostSeconds` by the database's clock),
 * most free memory first (then by name), with what each has free. `exclude` leaves hosts out (a move's source).
 */
export async function placeableHosts(
  knex: Knex,
  lostSeconds: number,
  exclude: string[] = [],
): Promise<Array<{ name: string; free_memory_mb: number }>> {
  const rows = await knex({ h: 'hosts' })
    .leftJoin(webMemoryUsed(knex), 'u.host', 'h.name')
    .where('h.status', 'ready')
    .where('h.heartbeat_at', '>=', lostAfter(knex, lostSeconds))
    .whereNotIn('h.name', exclude)
    .select('h.name', knex.raw('(h.memory_mb - coalesce(u.used, 0))::int AS free_memory_mb'))
    .orderBy([
      { column: 'free_memory_mb', order: 'desc' },
      { column: 'h.name', order: 'asc' },
    ]);
  return rows.map((r: { name: string; free_memory_mb: number }) => ({
    name: r.name,
    free_memory_mb: Number(r.free_memory_mb),
  }));
}

/**
 * One host's free memory (capacity less its placed web servers', as webMemoryUsed counts them), whatever its status;
 * undefined: no such host. `exceptServer`: that server's own open resize or scale is not counted.
 */
export async function hostFreeMemory(knex: Knex, name: string, exceptServer?: string): Promise<number | undefined> {
  const row = await knex({ h: 'hosts' })
    .leftJoin(webMemoryUsed(knex, exceptServer), 'u.host', 'h.name')
    .where('h.name', name)
    .first(knex.raw('(h.memory_mb - coalesce(u.used, 0))::int AS free_memory_mb'));
  return row ? Number(row.free_memory_mb) : undefined;
}

/** Web servers created before placement (host null) are the control plane's own host's: given it at its start. */
export async function adoptUnplacedServers(knex: Knex, hostName: string): Promise<number> {
  return knex('servers').where('role', 'web').whereNull('host').update({ host: hostName });
}

/**
 * Where an environment's web server is placed: its host's name and the STORAGE_ROOTS that host published
 * (`roots` null when no such host is registered), or null when it has no host recorded (created before placement).
 */
export async function environmentHost(
  knex: Knex | Knex.Transaction,
  environmentId: string,
): Promise<{ name: string; roots: string[] | null } | null> {
  const row = await knex({ s: 'servers' })
    .leftJoin({ h: 'hosts' }, 'h.name', 's.host')
    .where({ 's.environment_id': environmentId, 's.role': 'web' })
    .whereNotNull('s.host')
    .first('s.host', 'h.storage_roots');
  return row ? { name: row.host, roots: row.storage_roots ?? null } : null;
}

/** The hosts whose agent is not lost, with the id of the encryption key each loaded at its start (`npm run keys`). */
export async function hostKeyIds(
  knex: Knex,
  lostSeconds: number,
): Promise<Array<{ name: string; keyId: string | null }>> {
  const rows: Array<{ name: string; encryption_key_id: string | null }> = await knex('hosts')
    .where('heartbeat_at', '>=', lostAfter(knex, lostSeconds))
    .orderBy('name')
    .select('name', 'encryption_key_id');
  return rows.map((r) => ({ name: r.name, keyId: r.encryption_key_id }));
}
