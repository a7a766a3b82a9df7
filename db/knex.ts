import knexFactory, { type Knex } from 'knex';
import pg from 'pg';

// Keep bigint (task seq) and timestamps as JS-friendly values.
pg.types.setTypeParser(20, (v) => Number(v)); // int8 -> number (seq, counts fit in 2^53)

interface PoolOptions {
  min?: number;
  max?: number;
  /** How long a query waits for a connection of the pool before it fails (knex's default: 60 s). */
  acquireTimeoutMs?: number;
  /** How long a new connection may take to be made before it fails (pg's default: no limit). */
  connectTimeoutMs?: number;
}

/**
 * For a process that goes on serving while its database is away (the edge, the shipper): a connection not had
 * in 5 s is an error to log and retry, not a wait of a minute, and its stop never waits longer than that on a
 * database that stopped answering (a host cut off drops packets: a connect would otherwise wait for good).
 */
export const SERVES_WITHOUT_DATABASE: PoolOptions = { acquireTimeoutMs: 5_000, connectTimeoutMs: 5_000 };

export function createKnex(databaseUrl: string, pool: PoolOptions = {}): Knex {
  return knexFactory({
    client: 'pg',
    connection:
      pool.connectTimeoutMs === undefined
        ? databaseUrl
        : { connectionString: databaseUrl, connectionTimeoutMillis: pool.connectTimeoutMs },
    pool: { min: pool.min ?? 0, max: pool.max ?? 10 },
    ...(pool.acquireTimeoutMs === undefined ? {} : { acquireConnectionTimeout: pool.acquireTimeoutMs }),
  });
}
