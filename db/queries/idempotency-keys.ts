/**
 * `Idempotency-Key`s and the answers kept under them (api/lib/idempotency.ts), 24 hours each. The API writes and
 * reads them; the daily prune (activities/maintenance) deletes the expired ones.
 */
import type { Knex } from 'knex';
import { deleteInBatches } from './batches';

/** How long a key, and the answer kept under it, lasts (a PostgreSQL interval). */
const KEY_LIFETIME = '24 hours';

export interface IdempotencyKeyRow {
  id: string;
  request_hash: string;
  status: 'pending' | 'done';
  task_ids: string[] | null;
  single: boolean | null;
  answer_status: number | null;
  answer_sealed: string | null;
}

/** What a finished request keeps under its key. */
export type KeptAnswer = Partial<Pick<IdempotencyKeyRow, 'task_ids' | 'single' | 'answer_status' | 'answer_sealed'>>;

/**
 * Takes `key` for `userId`'s request: its id, or null when the key is held (by a request under way or a kept answer).
 * The same caller's expired key is deleted first, so a key reused after 24 hours is a new one.
 */
export async function claimKey(knex: Knex, userId: string, key: string, requestHash: string): Promise<string | null> {
  await knex('idempotency_keys')
    .where({ user_id: userId, key })
    .where('created_at', '<', knex.raw('now() - ?::interval', [KEY_LIFETIME]))
    .del();
  const inserted = await knex('idempotency_keys')
    .insert({ user_id: userId, key, request_hash: requestHash, status: 'pending' })
    .onConflict(['user_id', 'key'])
    .ignore()
    .returning('id');
  return inserted.length > 0 ? (inserted[0] as { id: string }).id : null;
}

export async function findKey(knex: Knex, userId: string, key: string): Promise<IdempotencyKeyRow | undefined> {
  return (await knex('idempotency_keys').where({ user_id: userId, key }).first()) as IdempotencyKeyRow | undefined;
}

/** Keeps the answer of the request that holds key `id`. */
export async function keepAnswer(knex: Knex, id: string, kept: KeptAnswer): Promise<void> {
  await knex('idempotency_keys')
    .where({ id })
    .update({ status: 'done', ...kept });
}

/** Gives a key back: its request was refused, or its answer is not one to keep. */
export async function releaseKey(knex: Knex, id: string): Promise<void> {
  await knex('idempotency_keys').where({ id }).del();
}

/** Deletes every caller's keys older than 24 hours at `asOf`, in batches; answers how many went. */
export function pruneExpiredKeys(knex: Knex, asOf: Date): Promise<number> {
  return deleteInBatches(knex, 'idempotency_keys', (q) =>
    q.where('created_at', '<', knex.raw('?::timestamptz - ?::interval', [asOf.toISOString(), KEY_LIFETIME])),
  );
}
