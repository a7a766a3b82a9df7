/**
 * The task log: what a task printed, in `task_logs` rows (task_id, seq, chunk). Lines are buffered and
 * flushed at least every 250 ms or every 50 lines; every chunk ends with a newline, so the log is the
 * chunks concatenated in seq order. seq keeps increasing across activities and retries of one task.
 * Never give it secrets: callers print commands and their output, never variables' values.
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

/** Appends one chunk with the next seq of the task (retries when another writer took that seq). */
export async function appendLogChunk(knex: Knex, taskId: string, chunk: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await knex.raw(
        `INSERT INTO task_logs (task_id, seq, chunk)
         SELECT ?, COALESCE(MAX(seq), 0) + 1, ? FROM task_logs WHERE task_id = ?`,
        [taskId, chunk, taskId],
      );
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== '23505' || attempt >= 20) throw err;
    }
  }
}

export function createTaskLog(knex: Knex, taskId: string, opts: { flushMs?: number; maxLines?: number } = {}): TaskLog {
  const flushMs = opts.flushMs ?? 250;
  const maxLines = opts.maxLines ?? 50;
  let buffer: string[] = [];
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
      appendLogChunk(knex, taskId, chunk).catch(() => {
        // The log is best effort: a failing write must not fail the step it describes.
        failures += 1;
      }),
    );
    return chain;
  };

  return {
    line(text: string) {
      buffer.push(text.length > MAX_LINE ? `${text.slice(0, MAX_LINE)}…` : text);
      if (buffer.length >= maxLines) void flush();
      else if (!timer) timer = setTimeout(() => void flush(), flushMs);
    },
    flush,
    async close() {
      await flush();
      void failures;
    },
  };
}
