import { CancelledFailure, Context } from '@temporalio/activity';

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
