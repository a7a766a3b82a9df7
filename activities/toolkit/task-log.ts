/**
 * The task log: what a task printed, in `task_logs` rows (task_id, seq, chunk). Lines are buffered and
 * flushed at least every 250 ms or every 50 lines; every chunk ends with a newline, so the log is the
 * chunks concatenated in seq order. seq keeps increasing across activities and retries of one task.
 * Never give it secrets: callers print commands and their output, never variables' values.
 *
 * The log of one task keeps at most TASK_LOG_LIMIT_BYTES (UTF-8) of output, counted in
 * `task_log_sizes` across every activity and retry of the task, whichever worker writes. The head is
 * kept: output from the first line that does not fit is dropped, and one marker line stands where it
 * was dropped, "[... N bytes of output dropped: the task log is limited to 10 MiB (TASK_LOG_LIMIT_BYTES) ...]",
 * its count brought up to date as more is dropped. The workflow's own few lines (headings, the outcome)
 * are always kept, after the marker, so the log still ends with how the task ended.
 */
import type { Knex } from 'knex';

export interface TaskLog {
  line(text: string): void;
  /** Writes what is buffered now. */
  flush(): Promise<void>;
  /** Flushes and stops the timer. */
  close(): Promise<void>;
}

const MAX_LINE = 8192;
const DEFAULT_TASK_LOG_LIMIT_BYTES = 10 * 1024 * 1024;

interface AppendOptions {
  /** The cap of the task's log (TASK_LOG_LIMIT_BYTES). */
  limitBytes?: number;
  /** Kept even beyond the cap: the workflow's own headings and outcome (a few short lines). */
  always?: boolean;
}

function readableSize(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

function droppedMarker(dropped: number, limitBytes: number): string {
  return `[... ${dropped} bytes of output dropped: the task log is limited to ${readableSize(limitBytes)} (TASK_LOG_LIMIT_BYTES) ...]\n`;
}

/** The whole lines at the start of `chunk` that fit in `room` bytes ('' when none does). */
function linesThatFit(chunk: string, room: number): string {
  if (room <= 0) return '';
  const buf = Buffer.from(chunk, 'utf8');
  if (buf.length <= room) return chunk;
  const cut = buf.subarray(0, room).lastIndexOf(0x0a);
  return cut < 0 ? '' : buf.subarray(0, cut + 1).toString('utf8');
}

/**
 * Appends one chunk with the next seq of the task, within the task's cap. One transaction that locks
 * the task's size row, so concurrent writers of one task take turns and the count stays exact.
 */
export async function appendLogChunk(
  knex: Knex,
  taskId: string,
  chunk: string,
  opts: AppendOptions = {},
): Promise<void> {
  const limit = opts.limitBytes ?? DEFAULT_TASK_LOG_LIMIT_BYTES;
  await knex.transaction(async (trx) => {
    await trx.raw('INSERT INTO task_log_sizes (task_id) VALUES (?) ON CONFLICT (task_id) DO NOTHING', [taskId]);
    const size = await trx('task_log_sizes')
      .where({ task_id: taskId })
      .forUpdate()
      .first('bytes', 'dropped', 'marker_seq');
    const last = await trx('task_logs').where({ task_id: taskId }).max('seq as seq').first();
    let seq = Number(last?.seq ?? 0);
    const bytes = Number(size.bytes);
    let dropped = Number(size.dropped);
    // Once anything was dropped, later capped output is dropped too: the marker stays where the gap is.
    const kept = opts.always ? chunk : dropped > 0 ? '' : linesThatFit(chunk, limit - bytes);
    const keptBytes = Buffer.byteLength(kept, 'utf8');
    const droppedNow = Buffer.byteLength(chunk, 'utf8') - keptBytes;
    let markerSeq: number | null = size.marker_seq;
    if (kept) await trx('task_logs').insert({ task_id: taskId, seq: ++seq, chunk: kept });
    if (droppedNow > 0) {
      dropped += droppedNow;
      const marker = droppedMarker(dropped, limit);
      if (markerSeq) await trx('task_logs').where({ task_id: taskId, seq: markerSeq }).update({ chunk: marker });
      else await trx('task_logs').insert({ task_id: taskId, seq: (markerSeq = ++seq), chunk: marker });
    }
    await trx('task_log_sizes')
      .where({ task_id: taskId })
      .update({ bytes: bytes + keptBytes, dropped, marker_seq: markerSeq });
  });
}

/**
 * The most output a task log holds in memory, buffered or on its way to the database: what a step prints
 * faster than the database takes it beyond this is dropped (counted, and said in one line once the log has
 * caught up), so a step's output never grows the worker without bound.
 */
const MAX_BACKLOG_BYTES = 4 * 1024 * 1024;

export function createTaskLog(
  knex: Knex,
  taskId: string,
  opts: { flushMs?: number; maxLines?: number; limitBytes?: number; maxBacklogBytes?: number } = {},
): TaskLog {
  const flushMs = opts.flushMs ?? 250;
  const maxLines = opts.maxLines ?? 50;
  const maxBacklog = opts.maxBacklogBytes ?? MAX_BACKLOG_BYTES;
  let buffer: string[] = [];
  /** Characters buffered or written but not yet stored. */
  let backlog = 0;
  /** Characters dropped while the backlog was full, not yet said in the log. */
  let behind = 0;
  let timer: NodeJS.Timeout | null = null;
  let chain: Promise<void> = Promise.resolve();
  let failures = 0;

  const flush = (): Promise<void> => {
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    if (buffer.length === 0) return chain;
    const chunk = buffer.join('\n') + '\n';
    buffer = [];
    chain = chain.then(() =>
      appendLogChunk(knex, taskId, chunk, { limitBytes: opts.limitBytes })
        .catch(() => {
          // The log is best effort: a failing write must not fail the step it describes.
          failures += 1;
        })
        .finally(() => {
          backlog -= chunk.length;
        }),
    );
    return chain;
  };

  const push = (text: string) => {
    buffer.push(text);
    backlog += text.length + 1;
    if (buffer.length >= maxLines) void flush();
    else if (!timer) timer = setTimeout(() => void flush(), flushMs);
  };

  return {
    line(text: string) {
      const line = text.length > MAX_LINE ? `${text.slice(0, MAX_LINE)}…` : text;
      if (backlog + line.length > maxBacklog) {
        behind += line.length + 1;
        return;
      }
      if (behind > 0) {
        push(`[... ${behind} characters of output dropped: printed faster than the task log could store them ...]`);
        behind = 0;
      }
      push(line);
    },
    flush,
    async close() {
      if (behind > 0) {
        push(`[... ${behind} characters of output dropped: printed faster than the task log could store them ...]`);
        behind = 0;
      }
      await flush();
      void failures;
    },
  };
}

/** What a task log needs: the database, and the cap of each task's log (TASK_LOG_LIMIT_BYTES). */
interface TaskLogDeps {
  knex: Knex;
  config: { taskLogLimitBytes: number };
}

/**
 * Runs `fn` with the task's log (within TASK_LOG_LIMIT_BYTES), closed (flushed) afterwards whatever happens.
 * Every activity that writes a task log goes through here.
 */
export async function withTaskLog<T>(deps: TaskLogDeps, taskId: string, fn: (log: TaskLog) => Promise<T>): Promise<T> {
  const log = createTaskLog(deps.knex, taskId, { limitBytes: deps.config.taskLogLimitBytes });
  try {
    return await fn(log);
  } finally {
    await log.close();
  }
}
