import { CancelledFailure, Context } from '@temporalio/activity';

/**
 * The environment of build steps, deploy steps and web processes: a minimal, fixed set (no worker secret
 * such as DATABASE_URL, nor the worker's HOME or TMPDIR, leaks into a user's commands; the sandbox sets the
 * environment's own HOME). Environment variables of projects, when they exist, are merged on top by their
 * area; values are never printed.
 */
export function stepEnv(extra: Record<string, string> = {}): Record<string, string | undefined> {
  const base: Record<string, string | undefined> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    LANG: process.env.LANG ?? 'C.UTF-8',
  };
  return { ...base, ...extra };
}

/**
 * Heartbeats the current activity every second while `fn` runs (a worker that died is noticed within the
 * heartbeat timeout and the activity retried elsewhere) and hands `fn` the activity's cancellation signal.
 */
export async function withHeartbeat<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  ctx.heartbeat();
  const timer = setInterval(() => {
    try {
      ctx.heartbeat();
    } catch {
      // heartbeating stops being possible once the activity is done
    }
  }, 1000);
  try {
    const result = await fn(ctx.cancellationSignal);
    // Cancelled (the workflow was cancelled): say so, so the workflow ends `cancelled`, not failed.
    if (ctx.cancellationSignal.aborted) throw new CancelledFailure('cancelled');
    return result;
  } finally {
    clearInterval(timer);
  }
}
