import { afterAll, beforeAll } from 'vitest';
import type { TestContext } from './context';

/**
 * The heartbeat timeout the files that kill workers run with (ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS: a killed
 * worker's activity is retried after it, instead of the profiles' 10 s or 15 s).
 */
export const SHORT_HEARTBEAT_ENV = { ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS: '4' };

/**
 * Marks the enclosing describe as running at the real heartbeat timeouts (the production default: the setting
 * unset), so that each file shortening them keeps one test at the real value. The tasks the describe starts
 * carry no shorter timeout; the file's own one comes back after it.
 */
export function atRealHeartbeatTimeouts(t: TestContext): void {
  let kept: number | undefined;
  beforeAll(() => {
    kept = t.deps.config.activityHeartbeatTimeoutSeconds;
    t.deps.config.activityHeartbeatTimeoutSeconds = undefined;
  });
  afterAll(() => {
    t.deps.config.activityHeartbeatTimeoutSeconds = kept;
  });
}

/** The heartbeat timeouts (seconds) of the activities a task's workflow scheduled (its history), in order. */
export async function scheduledHeartbeatTimeouts(t: TestContext, taskId: string): Promise<number[]> {
  const { workflow_id } = await t.deps.knex('tasks').where({ id: taskId }).first('workflow_id');
  const history = await t.deps.temporal.workflow.getHandle(workflow_id).fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const timeout = e.activityTaskScheduledEventAttributes?.heartbeatTimeout;
    return timeout ? [Number(String(timeout.seconds ?? 0))] : [];
  });
}
