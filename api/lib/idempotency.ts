/**
 * `Idempotency-Key` on task-starting POSTs: the same caller sending the same key with the same request
 * within 24 hours gets the same task(s) again (200, `Idempotent-Replayed: true`) instead of a second one, so
 * a retried CI request never deploys twice; the same key with another request is 422. A request under way
 * holds its key: a duplicate arriving meanwhile waits for it (briefly), then answers as above, or 409
 * `idempotency_key_in_use`. A refused request gives its key back (nothing is kept).
 */
import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import type { Knex } from 'knex';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
const KEY_RE = /^[\x21-\x7e]{1,255}$/;
const WAIT_MS = 10_000;

interface KeyRow {
  id: string;
  request_hash: string;
  status: 'pending' | 'done';
  task_ids: string[] | null;
  single: boolean | null;
}

function requestHash(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}\n${JSON.stringify(body ?? null)}`)
    .digest('hex');
}

/** The ids of the task(s) an answer carries: one task, or `{data: [tasks]}`. */
function taskIdsOf(body: unknown): { ids: string[]; single: boolean } | null {
  const b = body as { id?: unknown; data?: Array<{ id?: unknown }> } | null;
  if (b && typeof b.id === 'string') return { ids: [b.id], single: true };
  if (b && Array.isArray(b.data) && b.data.every((t) => typeof t?.id === 'string'))
    return { ids: b.data.map((t) => t.id as string), single: false };
  return null;
}

/**
 * Runs `run` under the request's Idempotency-Key (if any). `replay` presents the stored tasks again.
 */
export async function withIdempotency(
  ctx: Context,
  knex: Knex,
  actor: Actor,
  body: unknown,
  run: () => Promise<void>,
  replay: (taskIds: string[], single: boolean) => Promise<unknown>,
): Promise<void> {
  const key = ctx.get(IDEMPOTENCY_HEADER);
  if (!key) return run();
  if (!KEY_RE.test(key)) throw errors.invalid({ [IDEMPOTENCY_HEADER]: 'must be 1 to 255 visible ASCII characters' });
  const hash = requestHash(ctx.method, ctx.path, body);
  const owner = actor.user.id;
  await knex('idempotency_keys')
    .where({ user_id: owner, key })
    .where('created_at', '<', knex.raw("now() - interval '24 hours'"))
    .del();
  const inserted = await knex('idempotency_keys')
    .insert({ user_id: owner, key, request_hash: hash, status: 'pending' })
    .onConflict(['user_id', 'key'])
    .ignore()
    .returning('id');
  if (inserted.length > 0) {
    const id = (inserted[0] as { id: string }).id;
    try {
      await run();
    } catch (err) {
      await knex('idempotency_keys').where({ id }).del();
      throw err;
    }
    const tasks = ctx.status >= 200 && ctx.status < 300 ? taskIdsOf(ctx.body) : null;
    if (tasks)
      await knex('idempotency_keys')
        .where({ id })
        .update({ status: 'done', task_ids: tasks.ids, single: tasks.single });
    else await knex('idempotency_keys').where({ id }).del();
    return;
  }
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const row = (await knex('idempotency_keys').where({ user_id: owner, key }).first()) as KeyRow | undefined;
    if (!row) return withIdempotency(ctx, knex, actor, body, run, replay); // given back meanwhile: ours now
    if (row.request_hash !== hash) {
      throw errors.invalid({
        [IDEMPOTENCY_HEADER]: 'was used with another request in the last 24 hours; use a new key',
      });
    }
    if (row.status === 'done' && row.task_ids) {
      ctx.status = 200;
      ctx.set('Idempotent-Replayed', 'true');
      ctx.body = await replay(row.task_ids, row.single ?? true);
      return;
    }
    if (Date.now() > deadline) {
      throw appError('idempotency_key_in_use');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
