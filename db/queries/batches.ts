/**
 * Deleting many rows without one long statement: the daily prunes (activities/maintenance, the expired
 * Idempotency-Keys) delete in batches, so no statement holds many locks or runs long on a large table.
 */
import type { Knex } from 'knex';

const BATCH = 5_000;

/** Deletes up to BATCH rows of `table` matching `where`, again and again until none is left; answers how many. */
export async function deleteInBatches(
  knex: Knex,
  table: string,
  where: (q: Knex.QueryBuilder) => void,
): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await knex(table)
      .whereIn('ctid', (q) => {
        q.select('ctid').from(table).limit(BATCH);
        where(q);
      })
      .delete();
    total += n;
    if (n < BATCH) return total;
  }
}
