/**
 * `Idempotency-Key` on every write (POST, PUT, PATCH, DELETE) of a signed-in caller: the same caller sending the
 * same key with the same request within 24 hours gets the first request's answer again (`Idempotent-Replayed:
 * true`) instead of a second change. A task start answers its task(s) as they are now (200); any other write
 * answers what it answered then (its status and body, kept sealed: a token's creation answer holds its secret).
 * So a request whose answer was lost (a dropped connection, a proxy's 502, the browser sending a POST again by
 * itself) can be sent again: a CI retry never deploys twice, and a click never creates two domains.
 *
 * The same key with another request is 422. A request under way holds its key: a duplicate arriving meanwhile waits
 * for it (briefly), then answers as above, or 409 `idempotency_key_in_use`. A refused request gives its key back
 * (nothing is kept), as does an answer that is not JSON (a download).
 */
import { createHmac } from 'node:crypto';
import type { Context } from 'koa';
import type { Knex } from 'knex';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';
import {
  claimKey,
  findKey,
  type IdempotencyKeyRow,
  type KeptAnswer,
  keepAnswer,
  releaseKey,
} from '../../db/queries/idempotency-keys';
import { open, seal } from '../../system/crypto';
import { aad } from '../../db/aad';
import type { Logger } from '../../system/logger';
import type { Secrets } from '../../system/secrets';
import type { RouteDef } from './define-route';

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
const KEY_RE = /^[\x21-\x7e]{1,255}$/;
const WAIT_MS = 10_000;
/** An answer larger than this is not kept: its key is given back. */
const MAX_KEPT_BYTES = 1024 * 1024;

/**
 * A write whose answer is kept under its Idempotency-Key (api/lib/idempotency.ts): every write of a signed-in caller
 * but an upload (its files are not part of the request the key is checked against). Signing in, up and the like
 * come before any caller.
 */
export function keepsAnswers(def: RouteDef): boolean {
  return (
    def.method !== 'get' && def.auth !== 'none' && def.auth !== 'signature' && !def.bodyTypes?.includes('multipart')
  );
}

/** A write that honours Idempotency-Key: a task start (its task is answered again) or one whose answer is kept. */
export function takesIdempotencyKey(def: RouteDef): boolean {
  return !!def.startsTask || keepsAnswers(def);
}

/** What withIdempotency needs of the process. */
export interface IdempotencyDeps {
  knex: Knex;
  logger: Pick<Logger, 'warn'>;
  secrets: Pick<Secrets, 'encryptionKey' | 'previousEncryptionKeys'>;
}

/** How a task start is answered again: the stored tasks, presented as they are now. */
export type ReplayTasks = (taskIds: string[], single: boolean) => Promise<unknown>;

/** A keyed digest of the request: a body may hold a password or a secret value, so no plain hash of it is kept. */
function requestHash(deps: IdempotencyDeps, ctx: Context, body: unknown): string {
  return createHmac('sha256', deps.secrets.encryptionKey.key)
    .update(`idempotency\n${ctx.method} ${ctx.path}?${ctx.querystring}\n${JSON.stringify(body ?? null)}`)
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

/** The answer's body as JSON text, or null when it is not one to keep (a stream, bytes, too large). */
function keepable(body: unknown): string | null {
  if (body === undefined || body === null) return 'null';
  if (typeof body !== 'object' || Buffer.isBuffer(body) || typeof (body as { pipe?: unknown }).pipe === 'function')
    return null;
  const text = JSON.stringify(body);
  return Buffer.byteLength(text) <= MAX_KEPT_BYTES ? text : null;
}

const aadOf = aad.idempotencyAnswer;

/** What the first request answered, kept under its key; null when there is nothing to keep (the key is given back). */
function answerToKeep(
  deps: IdempotencyDeps,
  id: string,
  ctx: Context,
  replayTasks: ReplayTasks | undefined,
): KeptAnswer | null {
  if (ctx.status < 200 || ctx.status >= 300) return null;
  // an answer that sets a cookie (a session's) does its work in the header, which is not kept
  if (ctx.response.headers['set-cookie']) return null;
  if (replayTasks) {
    const tasks = taskIdsOf(ctx.body);
    return tasks ? { task_ids: tasks.ids, single: tasks.single } : null;
  }
  const text = keepable(ctx.body);
  if (text === null) return null;
  return { answer_status: ctx.status, answer_sealed: seal(deps.secrets, text, aadOf(id)) };
}

/** Answers a repeat with what the first request answered. */
async function replay(
  deps: IdempotencyDeps,
  ctx: Context,
  row: IdempotencyKeyRow,
  replayTasks: ReplayTasks | undefined,
) {
  ctx.set('Idempotent-Replayed', 'true');
  if (row.task_ids && replayTasks) {
    ctx.status = 200;
    ctx.body = await replayTasks(row.task_ids, row.single ?? true);
    return;
  }
  const body = JSON.parse(open(deps.secrets, row.answer_sealed as string, aadOf(row.id))) as unknown;
  ctx.set('Cache-Control', 'no-store');
  if (body !== null) ctx.body = body;
  ctx.status = row.answer_status as number;
}

/**
 * Runs `run` under the request's Idempotency-Key (if any). `replayTasks` (task-starting routes) presents the stored
 * tasks again; without it, the answer itself is kept.
 */
export async function withIdempotency(
  ctx: Context,
  deps: IdempotencyDeps,
  actor: Actor,
  body: unknown,
  run: () => Promise<void>,
  replayTasks?: ReplayTasks,
): Promise<void> {
  const key = ctx.get(IDEMPOTENCY_HEADER);
  if (!key) return run();
  if (!KEY_RE.test(key)) throw errors.invalid({ [IDEMPOTENCY_HEADER]: 'must be 1 to 255 visible ASCII characters' });
  const { knex } = deps;
  const hash = requestHash(deps, ctx, body);
  const owner = actor.user.id;
  const id = await claimKey(knex, owner, key, hash);
  if (id) {
    try {
      await run();
    } catch (err) {
      // the request's own error is its answer, whether or not its key can be given back
      await releaseKey(knex, id).catch((e) => deps.logger.warn({ err: (e as Error).message }, 'key not given back'));
      throw err;
    }
    // The change is made, so its answer goes out even when the key's record fails: a repeat then waits on the
    // pending key (409 idempotency_key_in_use) and never makes the change twice.
    try {
      const kept = answerToKeep(deps, id, ctx, replayTasks);
      if (kept) await keepAnswer(knex, id, kept);
      else await releaseKey(knex, id);
    } catch (e) {
      deps.logger.warn({ err: (e as Error).message, keyId: id }, 'the answer was not kept under its Idempotency-Key');
    }
    return;
  }
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const row = await findKey(knex, owner, key);
    if (!row) return withIdempotency(ctx, deps, actor, body, run, replayTasks); // given back meanwhile: ours now
    if (row.request_hash !== hash) {
      throw errors.invalid({
        [IDEMPOTENCY_HEADER]: 'was used with another request in the last 24 hours; use a new key',
      });
    }
    if (row.status === 'done' && (row.task_ids || row.answer_sealed)) return replay(deps, ctx, row, replayTasks);
    if (Date.now() > deadline) {
      throw appError('idempotency_key_in_use');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
