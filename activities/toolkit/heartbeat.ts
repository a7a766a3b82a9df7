import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';

/**
 * Heartbeats the current activity every second while `fn` runs (a worker that died is noticed within the
 * heartbeat timeout and the activity retried elsewhere) and hands `fn` the activity's cancellation signal.
 *
 * Once that signal aborted, the activity ends as what aborted it, whatever `fn` returned or threw: `cancelled`
 * when the workflow was cancelled (the task ends cancelled, not failed); when its worker is stopping, a
 * retryable failure, so the next worker runs it again at once (a "cancelled" the server never asked for is
 * refused, and the attempt would only end at its heartbeat timeout).
 */
export async function withHeartbeat<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  ctx.heartbeat();
  const stopBeating = heartbeatEvery(ctx, 1000);
  let result: T;
  try {
    result = await fn(ctx.cancellationSignal);
  } catch (err) {
    if (ctx.cancellationSignal.aborted) throw stopped(ctx);
    throw err;
  } finally {
    stopBeating();
  }
  if (ctx.cancellationSignal.aborted) throw stopped(ctx);
  return result;
}

/** Heartbeats `ctx`'s activity every `ms` until the function it answers is called. */
export function heartbeatEvery(ctx: Context, ms: number): () => void {
  const timer = setInterval(() => {
    try {
      ctx.heartbeat();
    } catch {
      // heartbeating stops being possible once the activity is done
    }
  }, ms);
  return () => clearInterval(timer);
}

function stopped(ctx: Context): Error {
  const why = ctx.cancellationDetails;
  if (why?.workerShutdown && !why.cancelRequested)
    return ApplicationFailure.retryable(
      'its worker stopped before it ended; it runs again on the next worker',
      'WorkerStopped',
    );
  return new CancelledFailure('cancelled');
}
