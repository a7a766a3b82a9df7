/** Personal access tokens as the operator's `npm run keys` counts them (the API reads and writes its own). */
import type { Knex } from 'knex';

/** The tokens that still work (not revoked, not expired), by the id of the key of their digest. */
export async function workingTokensByKey(
  knex: Knex,
): Promise<Array<{ keyId: string; tokens: number; lastExpiry: Date | null }>> {
  const rows: Array<{ key_id: string; n: number; last: Date | null }> = await knex('access_tokens')
    .whereNull('revoked_at')
    .where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', knex.fn.now()))
    .groupBy('key_id')
    .orderBy('key_id')
    .select('key_id', knex.raw('count(*)::int AS n'), knex.raw('max(expires_at) AS last'));
  return rows.map((r) => ({ keyId: r.key_id, tokens: r.n, lastExpiry: r.last }));
}
