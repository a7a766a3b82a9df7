/**
 * `instance_ports`: which port of its host's INSTANCE_PORTS each running web instance holds (migration 690).
 * Written and deleted by the host's own worker (host/provider/instance-ports.ts through activities/index.ts);
 * read by anyone who wants to know where a host's instances are.
 */
import type { Knex } from 'knex';

/**
 * Takes the lowest port of `range` that no instance of `host` holds and that is not in `skip`, for the
 * environment's instance `slot`. Serialized per host (an advisory lock for the transaction). Throws when every
 * port is held.
 */
export async function takeInstancePort(
  knex: Knex,
  o: { host: string; range: { from: number; to: number }; environmentId: string; slot: number; skip?: number[] },
): Promise<number> {
  return knex.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`instance_ports:${o.host}`]);
    const held = new Set<number>(
      (await trx('instance_ports').where({ host: o.host }).pluck('port')).map(Number).concat(o.skip ?? []),
    );
    for (let port = o.range.from; port <= o.range.to; port++) {
      if (held.has(port)) continue;
      await trx('instance_ports').insert({ host: o.host, port, environment_id: o.environmentId, slot: o.slot });
      return port;
    }
    throw new Error(
      `every port of INSTANCE_PORTS (${o.range.from}-${o.range.to}) is held by an instance on host ${o.host}`,
    );
  });
}

export async function releaseInstancePort(knex: Knex, host: string, port: number): Promise<void> {
  await knex('instance_ports').where({ host, port }).delete();
}

/** Releases every port of `host` but `keep` (a worker's start: what no instance of it holds); returns them. */
export async function releaseInstancePortsExcept(knex: Knex, host: string, keep: number[]): Promise<number[]> {
  const q = knex('instance_ports').where({ host });
  if (keep.length) q.whereNotIn('port', keep);
  return (await q.delete().returning('port')).map((r: { port: number }) => Number(r.port));
}
