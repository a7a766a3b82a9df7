/**
 * Build capacity across the whole system, in request order, kept in PostgreSQL (which every worker
 * process shares):
 *
 *  - a slot is a session-level advisory lock `pg_try_advisory_lock(BUILD_SLOT_LOCK_KEY, n)`, n in
 *    0..BUILD_CONCURRENCY-1, held on a connection of its own for the whole build: a worker that dies drops
 *    its connection and PostgreSQL frees the slot at once (every worker must run with the same
 *    BUILD_CONCURRENCY);
 *  - a task waiting for a slot has a `build_queue` row (task_seq = tasks.seq); only the oldest waiting task
 *    (smallest seq) may take a free slot, so slots go in request order. Its waiting activity refreshes the
 *    row at every poll; a row not refreshed for BUILD_QUEUE_LEASE_SECONDS (its worker died and the retry has
 *    not come back yet) does not hold the others up, and the retry keeps its place in line;
 *  - the task stays `pending` while it waits; taking a slot moves it to `running` (compare-and-set: a task
 *    cancelled meanwhile gives the slot back and is not built).
 *
 * The waiting activity heartbeats, so a cancellation of its workflow reaches it and the wait ends cancelled.
 */
import { CancelledFailure, Context } from '@temporalio/activity';
import type { Knex } from 'knex';
import pg from 'pg';
import { markTaskRunning } from '../../db/queries/tasks';
import type { GatedStart } from '../../db/queries/task-gate';
import { hostFault } from '../toolkit/failures';

/** First key of the advisory locks that are build slots ("vc", builds); the second key is the slot number. */
export const BUILD_SLOT_LOCK_KEY = 0x76630b01;
/** How often a waiting build looks at the queue: the first two in line often, the others less. */
const BUILD_QUEUE_POLL_MS = 200;
const BUILD_QUEUE_FAR_POLL_MS = 1000;
/** A waiting row not refreshed for this long is passed over until its task's retry refreshes it. */
const BUILD_QUEUE_LEASE_SECONDS = 30;
/** Once its task is found cancelled, how long the activity waits for the workflow's cancellation to reach it. */
const CANCEL_GRACE_MS = 5000;

interface BuildSlot {
  slot: number;
  /** Aborted when the slot's connection is lost: the slot may then be another build's. */
  lost: AbortSignal;
  /** Gives the slot back (closes its connection). */
  release(): Promise<void>;
}

/** Waits `ms` or until the activity is cancelled, whichever comes first. */
function pause(ctx: Context, ms: number): Promise<void> {
  const signal = ctx.cancellationSignal;
  return new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** The activity was cancelled: by its workflow (the wait ends cancelled) or by its worker (retried elsewhere). */
function throwIfCancelled(ctx: Context): void {
  if (!ctx.cancellationSignal.aborted) return;
  if (ctx.cancellationDetails?.cancelRequested)
    throw new CancelledFailure('cancelled while waiting for build capacity');
  throw hostFault('WorkerStopped', 'the worker stopped while the build waited for capacity');
}

/**
 * Puts the task in line (or refreshes its row) and says how many live waiting tasks are ahead of it (rows of
 * ended tasks and rows not refreshed within the lease are passed over).
 */
async function queueState(knex: Knex, taskId: string): Promise<{ status: string | undefined; ahead: number }> {
  await knex.raw(
    `INSERT INTO build_queue (task_id, task_seq)
     SELECT id, seq FROM tasks WHERE id = ? AND status IN ('pending', 'running')
     ON CONFLICT (task_id) DO UPDATE SET seen_at = now()`,
    [taskId],
  );
  const { rows } = await knex.raw<{ rows: Array<{ status: string; ahead: number }> }>(
    `SELECT t.status,
            (SELECT count(*) FROM build_queue q JOIN tasks o ON o.id = q.task_id
              WHERE q.task_seq < t.seq AND o.status IN ('pending', 'running')
                AND q.seen_at > now() - make_interval(secs => ?))::int AS ahead
       FROM tasks t WHERE t.id = ?`,
    [BUILD_QUEUE_LEASE_SECONDS, taskId],
  );
  return { status: rows[0]?.status, ahead: rows[0]?.ahead ?? 0 };
}

async function leaveQueue(knex: Knex, taskId: string): Promise<void> {
  await knex('build_queue').where({ task_id: taskId }).del();
}

/** A connection of its own for holding a slot (a pool connection would outlive the build in the pool). */
async function openSlotConnection(databaseUrl: string): Promise<{ client: pg.Client; lost: AbortController }> {
  const client = new pg.Client({ connectionString: databaseUrl, keepAlive: true, application_name: 'vc-build-slot' });
  const lost = new AbortController();
  client.on('error', () => lost.abort());
  client.on('end', () => lost.abort());
  await client.connect();
  return { client, lost };
}

async function tryTakeSlot(client: pg.Client, capacity: number): Promise<number | undefined> {
  for (let slot = 0; slot < capacity; slot++) {
    const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::int, $2::int) AS ok', [
      BUILD_SLOT_LOCK_KEY,
      slot,
    ]);
    if (rows[0]?.ok) return slot;
  }
  return undefined;
}

/**
 * Waits (pending, heartbeating) until the task is first in line and a slot is free, takes it and moves the
 * task to `running`. Null when the task no longer wants a build (cancelled or ended meanwhile). A task
 * already `running` (a retry after its worker died) takes a slot again in its original place in line.
 */
export async function acquireBuildSlot(opts: {
  knex: Knex;
  databaseUrl: string;
  capacity: number;
  taskId: string;
  /**
   * pending -> running once the slot is taken (default: markTaskRunning). A gated start that answers `waiting`
   * (another task keeps this one apart, db/queries/task-gate.ts) gives the slot back and keeps its place in line.
   */
  start?: (taskId: string) => Promise<GatedStart>;
}): Promise<BuildSlot | null> {
  const { knex, taskId } = opts;
  const start = opts.start ?? ((id: string) => markTaskRunning(knex, id));
  const ctx = Context.current();
  let conn: Awaited<ReturnType<typeof openSlotConnection>> | null = null;
  const closeConn = async () => {
    const c = conn;
    conn = null;
    await c?.client.end().catch(() => undefined);
  };
  try {
    for (;;) {
      ctx.heartbeat();
      throwIfCancelled(ctx);
      let state: Awaited<ReturnType<typeof queueState>>;
      try {
        state = await queueState(knex, taskId);
      } catch {
        // The database is unreachable for a moment: keep waiting (and heartbeating).
        await pause(ctx, BUILD_QUEUE_POLL_MS * 5);
        continue;
      }
      if (state.status !== 'pending' && state.status !== 'running') {
        await leaveQueue(knex, taskId).catch(() => undefined);
        await closeConn();
        if (state.status === 'cancelled') await awaitCancellation(ctx);
        return null;
      }
      if (state.ahead === 0) {
        try {
          conn ??= await openSlotConnection(opts.databaseUrl);
          const slot = await tryTakeSlot(conn.client, opts.capacity);
          if (slot !== undefined) {
            const started = await start(taskId);
            if (typeof started === 'object') {
              await closeConn();
              await pause(ctx, BUILD_QUEUE_FAR_POLL_MS);
              continue;
            }
            if (!started) {
              await closeConn();
              await leaveQueue(knex, taskId);
              await awaitCancellation(ctx);
              return null;
            }
            await leaveQueue(knex, taskId);
            const held = conn;
            conn = null;
            return {
              slot,
              lost: held.lost.signal,
              async release() {
                await held.client
                  .query('SELECT pg_advisory_unlock($1::int, $2::int)', [BUILD_SLOT_LOCK_KEY, slot])
                  .catch(() => undefined);
                await held.client.end().catch(() => undefined);
              },
            };
          }
        } catch (err) {
          if (err instanceof CancelledFailure) throw err;
          // The slot connection failed: a new one next time (a lock it held went with it).
          await closeConn();
        }
      }
      await pause(ctx, state.ahead <= 1 ? BUILD_QUEUE_POLL_MS : BUILD_QUEUE_FAR_POLL_MS);
    }
  } catch (err) {
    await closeConn();
    // Cancelled by its workflow: out of the line for good. Any other end keeps the row for the retry.
    if (err instanceof CancelledFailure) await leaveQueue(knex, taskId).catch(() => undefined);
    throw err;
  }
}

/**
 * The task was cancelled through the API (row first, workflow next): let the workflow's cancellation reach
 * this activity so the workflow ends `cancelled` as a cancellation; without one, the caller returns "not
 * started" and the workflow ends the task itself.
 */
async function awaitCancellation(ctx: Context): Promise<void> {
  const deadline = Date.now() + CANCEL_GRACE_MS;
  while (Date.now() < deadline) {
    ctx.heartbeat();
    if (ctx.cancellationSignal.aborted) break;
    await pause(ctx, BUILD_QUEUE_POLL_MS);
  }
  throwIfCancelled(ctx);
}
