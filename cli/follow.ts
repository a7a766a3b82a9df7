import { sleep, type Client } from './client';
import { EXIT } from './errors';
import { note, Progress, status as paintStatus } from './output';

/** Following a task: its log as it is written, its state, and the exit code of its outcome. */

export interface Task {
  id: string;
  kind: string;
  type: string;
  status: 'pending' | 'running' | 'succeeded' | 'failed' | 'cancelled';
  team_id: string;
  project_id: string | null;
  environment_id: string | null;
  account: { id: string | null; name: string | null; via: string };
  error: string | null;
  result: Record<string, unknown> | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** GET /tasks/{id} of a deploy-like task: when each phase ended, in order. */
  phases?: { name: string; at: string }[];
}

const ENDED = new Set(['succeeded', 'failed', 'cancelled']);
const POLL_MS = 500;

const hasEnded = (s: string) => ENDED.has(s);

/** 0 succeeded, 1 failed, 2 cancelled (CONTRACT); a task still going is not an outcome. */
export function exitCodeOf(task: Pick<Task, 'status'>): number {
  if (task.status === 'failed') return EXIT.failed;
  if (task.status === 'cancelled') return EXIT.cancelled;
  return EXIT.ok;
}

/**
 * Reads GET /tasks/{id}/log?after= until the status read with it (X-Task-Status, read before the
 * log) has ended, so the last read holds everything the task printed. The log goes to `write`
 * (stdout; stderr with --json), the state to a spinner or plain lines.
 */
export async function followTask(
  client: Client,
  taskId: string,
  opts: { write: (text: string) => void; label: string; after?: number },
): Promise<Task> {
  const progress = new Progress();
  let after = opts.after;
  let endsWithNewline = true;
  try {
    for (;;) {
      const res = await client.request<string>('GET', `/tasks/${taskId}/log`, { query: { after } });
      const seq = Number(res.headers.get('x-log-seq'));
      const state = res.headers.get('x-task-status') ?? 'unknown';
      if (Number.isInteger(seq) && seq > 0) after = seq;
      if (res.text) {
        opts.write(res.text);
        endsWithNewline = res.text.endsWith('\n');
      }
      if (hasEnded(state)) break;
      progress.update(`${opts.label}: ${state}`);
      await sleep(POLL_MS);
    }
  } finally {
    progress.stop();
  }
  if (!endsWithNewline) opts.write('\n');
  return client.get<Task>(`/tasks/${taskId}`);
}

/** Waits for a task to end without its log (--queue waiting for the task that holds the environment). */
export async function waitForTask(client: Client, taskId: string, label: string): Promise<Task> {
  const progress = new Progress();
  try {
    for (;;) {
      const task = await client.get<Task>(`/tasks/${taskId}`);
      if (hasEnded(task.status)) return task;
      progress.update(`${label}: ${task.status}`);
      await sleep(1000);
    }
  } finally {
    progress.stop();
  }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/**
 * Where a deploy-like task's time went, one line: the total (queued to its last phase) and the slowest
 * phase (the time from the phase before it). Null without two phases.
 */
function phaseSummary(task: Pick<Task, 'phases'>): string | null {
  const phases = task.phases ?? [];
  if (phases.length < 2) return null;
  const at = phases.map((p) => Date.parse(p.at));
  let slowest = 1;
  for (let i = 2; i < phases.length; i++) if (at[i] - at[i - 1] > at[slowest] - at[slowest - 1]) slowest = i;
  const total = at.at(-1)! - at[0];
  return (
    `Took ${seconds(total)} from ${phases[0].name} to ${phases.at(-1)!.name}; ` +
    `slowest phase: ${phases[slowest].name} ${seconds(at[slowest] - at[slowest - 1])} (after ${phases[slowest - 1].name})`
  );
}

/** The closing line of a followed task, on stderr. */
export function reportOutcome(task: Task): void {
  const what = `Task ${task.id} (${task.type}) ${paintStatus(task.status, process.stderr)}`;
  note(task.error ? `${what}: ${task.error}` : what);
  const summary = phaseSummary(task);
  if (summary) note(summary);
}
