/**
 * Tasks: the list (newest first, keyset pages over tasks.seq, an ETag over the page), one task with its
 * account and optionally the end of its log, the log itself (incrementally, by chunk seq), and cancel
 * (only while pending: compare-and-set in PostgreSQL, then the workflow run is cancelled).
 */
import type { Knex } from 'knex';
import type { Deps } from '../../system/deps';
import { Task } from '../../db/models/task';
import { cancelTask as cancelPendingTask } from '../../core/tasks';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';
import { authorize, can, reachableMemberships, type Action } from '../lib/policy';
import { strongEtag } from '../lib/etag';
import { encodeCursor, pageOf } from '../lib/pagination';
import { isoOrNull } from '../../core/time';
import { TASKS_CURSOR } from './schemas';
import { taskLogChunks } from '../../db/queries/task-logs';

export type TaskRow = Task & { account_name: string | null };

interface ListTasksQuery {
  team?: string;
  project?: string;
  environment?: string;
  kind?: Task['kind'];
  type?: string;
  limit: number;
  before?: number;
}

/** The teams whose tasks the caller may read (a token: its one team). */
async function readableTeamIds(knex: Knex, actor: Actor): Promise<string[]> {
  return (await reachableMemberships(knex, actor)).filter((m) => can(m.role, 'task:read')).map((m) => m.team_id);
}

const withAccount = (knex: Knex) =>
  Task.query(knex)
    .select('tasks.*', 'users.name as account_name')
    .leftJoin('users', 'users.id', 'tasks.account_user_id');

/**
 * A page of the caller's tasks, newest first, and its strong ETag: a hash of the rows' ids, statuses and
 * finished_at, and next_before (the only things of a page that change once its rows exist).
 */
export async function listTasks(deps: Deps, actor: Actor, query: ListTasksQuery) {
  let teamIds = await readableTeamIds(deps.knex, actor);
  if (query.team) teamIds = teamIds.filter((id) => id === query.team);
  let rows: TaskRow[] = [];
  if (teamIds.length > 0) {
    const q = withAccount(deps.knex)
      .orderBy('tasks.seq', 'desc')
      .limit(query.limit + 1);
    if (teamIds.length === 1) q.where('tasks.team_id', teamIds[0]);
    else q.whereIn('tasks.team_id', teamIds);
    if (query.project) q.where('tasks.project_id', query.project);
    if (query.environment) q.where('tasks.environment_id', query.environment);
    if (query.kind) q.where('tasks.kind', query.kind);
    if (query.type) q.where('tasks.type', query.type);
    if (query.before !== undefined) q.where('tasks.seq', '<', query.before);
    rows = (await q) as TaskRow[];
  }
  const { page, more } = pageOf(rows, query.limit);
  const nextBefore = more ? encodeCursor(TASKS_CURSOR, [page.at(-1)!.seq]) : null;
  const etag = strongEtag([...page.flatMap((r) => [r.id, r.status, isoOrNull(r.finished_at) ?? '']), nextBefore]);
  return { etag, rows: page, next_before: nextBefore };
}

/** A task the caller may act on; another team's task answers 404. */
async function findTask(deps: Deps, actor: Actor, id: string, action: Action): Promise<TaskRow> {
  const row = (await withAccount(deps.knex).where('tasks.id', id).first()) as TaskRow | undefined;
  if (!row) throw errors.notFound('task');
  await authorize(deps.knex, actor, row.team_id, action, 'task');
  return row;
}

const LOG_TAIL_CHARS = 4096;

/** The last ~4 KB of the log, starting at a line start, and the seq of its last chunk (0: nothing yet). */
async function logTail(knex: Knex, taskId: string): Promise<{ text: string; seq: number }> {
  // The shortest run of newest chunks holding at least LOG_TAIL_CHARS characters (or the whole log).
  const { rows } = await knex.raw<{ rows: Array<{ seq: number; chunk: string }> }>(
    `SELECT seq, chunk FROM (
       SELECT seq, chunk, sum(length(chunk)) OVER (ORDER BY seq DESC) AS acc FROM task_logs WHERE task_id = ?
     ) x WHERE acc - length(chunk) < ? ORDER BY seq`,
    [taskId, LOG_TAIL_CHARS],
  );
  const seq = rows.at(-1)?.seq ?? 0;
  const all = rows.map((r) => r.chunk).join('');
  // Every chunk ends with a newline, so a chunk start is a line start.
  if (all.length <= LOG_TAIL_CHARS) return { text: all, seq };
  let start = all.length - LOG_TAIL_CHARS;
  if (all[start - 1] !== '\n') {
    const nl = all.indexOf('\n', start);
    // A single line longer than the tail is shown cut; anything else starts at a line start.
    if (nl >= 0 && nl < all.length - 1) start = nl + 1;
  }
  return { text: all.slice(start), seq };
}

export async function getTask(deps: Deps, actor: Actor, id: string, include: string | undefined) {
  const row = await findTask(deps, actor, id, 'task:read');
  if (!include) return { row };
  return { row, tail: await logTail(deps.knex, row.id) };
}

/**
 * What the task printed after chunk `after` (everything when absent), in order, with the task's status
 * read first: a client that sees a final status has then read the whole log.
 */
export async function readTaskLog(deps: Deps, actor: Actor, id: string, after: number | undefined) {
  // findTask read the row (its status) before the chunks below are read.
  const row = await findTask(deps, actor, id, 'task:read');
  const chunks = await taskLogChunks(deps.knex, row.id, after ?? 0);
  return { status: row.status, seq: chunks.at(-1)?.seq ?? after ?? 0, text: chunks.map((c) => c.chunk).join('') };
}

/**
 * Cancels a task nothing has started (core/tasks.ts cancelTask); otherwise 409 task_not_cancellable.
 */
export async function cancelTask(deps: Deps, actor: Actor, id: string) {
  const row = await findTask(deps, actor, id, 'task:cancel');
  if (!(await cancelPendingTask(deps, row))) {
    const now = (await deps.knex('tasks').where({ id: row.id }).first('status'))?.status ?? row.status;
    throw appError(
      'task_not_cancellable',
      `The task is ${now}; only a pending task (nothing has started it) can be cancelled`,
      {
        extra: { status: now },
      },
    );
  }
  const fresh = (await withAccount(deps.knex).where('tasks.id', row.id).first()) as TaskRow;
  return fresh;
}
