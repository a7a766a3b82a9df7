/**
 * The activity interceptor every worker registers (processes/worker-runtime.ts): an activity scheduled with a
 * heartbeat timeout heartbeats while it runs, whatever its code does. Every host's worker polls the shared queues,
 * so the worker that took a step may be on a host that dies in the middle of it: the step is then run again by
 * another worker once its heartbeat timeout passed (20 s for the profiles that had none: workflows/profiles.ts),
 * not at its start-to-close timeout (3 to 5 minutes), while its task showed nothing happening.
 *
 * The first heartbeat comes a third of the timeout in: a step that ends sooner (most of them) sends none. Local
 * activities have no heartbeat: they run inside their workflow's task, whose own timeout covers them.
 */
import { existsSync, writeFileSync } from 'node:fs';
import type { Context } from '@temporalio/activity';
import type { ActivityInterceptors } from '@temporalio/worker';
import { heartbeatEvery } from './heartbeat';

export function keepAlive(ctx: Context): ActivityInterceptors {
  return {
    inbound: {
      async execute(input, next) {
        if (ctx.info.isLocal) return next(input);
        const timeoutMs = ctx.info.heartbeatTimeoutMs;
        const stopBeating = timeoutMs ? heartbeatEvery(ctx, Math.max(500, Math.floor(timeoutMs / 3))) : undefined;
        try {
          await heldByTest(ctx.info.activityType);
          return await next(input);
        } finally {
          stopBeating?.();
        }
      },
    },
  };
}

/**
 * Test hook, nothing else reads it: VC_FAULT_INJECT=hold-activity:<type>:<file> holds each activity of that type
 * this process takes, alive and heartbeating, while <file> exists, and says so by creating <file>.held (the tests
 * that kill a worker in the middle of a step: test/workflows/host-moves.test.ts, deploy-worker-crash.test.ts).
 */
async function heldByTest(activityType: string): Promise<void> {
  const fault = process.env.VC_FAULT_INJECT ?? '';
  const prefix = `hold-activity:${activityType}:`;
  if (!fault.startsWith(prefix)) return;
  const file = fault.slice(prefix.length);
  if (!existsSync(file)) return;
  writeFileSync(`${file}.held`, String(process.pid));
  while (existsSync(file)) await new Promise((r) => setTimeout(r, 100));
}
