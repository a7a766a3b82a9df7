import knexFactory, { type Knex } from 'knex';
import pg from 'pg';

// Keep bigint (task seq) and timestamps as JS-friendly values.
pg.types.setTypeParser(20, (v) => Number(v)); // int8 -> number (seq, counts fit in 2^53)

export function createKnex(databaseUrl: string, pool: { min?: number; max?: number } = {}): Knex {
  return knexFactory({
    client: 'pg',
    connection: databaseUrl,
    pool: { min: pool.min ?? 0, max: pool.max ?? 10 },
  });
}
