/**
 * The workflow interceptor every worker registers (processes/worker-runtime.ts bundles it): a run started with
 * a shorter heartbeat timeout (ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS, carried in its memo by
 * core/temporal-starts.ts) schedules the activities of the `heartbeating` and `long` profiles with it, so that
 * a dead worker shows sooner (the tests that kill workers). Without the memo (production's default) every
 * activity keeps its profile's timeout. Deterministic: the memo is fixed for the run.
 */
import { type WorkflowInterceptorsFactory, workflowInfo } from '@temporalio/workflow';
import { HEARTBEAT_TIMEOUT_MEMO } from '../db/workflow-names';
import { profiles } from './profiles';

const shortened: ReadonlySet<string> = new Set([
  profiles.heartbeating.heartbeatTimeout,
  profiles.long.heartbeatTimeout,
]);

export const interceptors: WorkflowInterceptorsFactory = () => ({
  outbound: [
    {
      scheduleActivity(input, next) {
        const seconds = workflowInfo().memo?.[HEARTBEAT_TIMEOUT_MEMO];
        const timeout = input.options.heartbeatTimeout;
        if (typeof seconds !== 'number' || typeof timeout !== 'string' || !shortened.has(timeout)) return next(input);
        return next({ ...input, options: { ...input.options, heartbeatTimeout: `${seconds}s` } });
      },
    },
  ],
});
