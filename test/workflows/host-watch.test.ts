import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { until } from '../helpers/until';
import { ensureHostWatchSchedule, hostWatchScheduleId } from '../../core/schedules';
import { stopHostWatch } from '../helpers/two-hosts';

/**
 * The host watch's schedule (core/schedules.ts, workflows/moves.ts watchHosts): a run does a round every
 * `everySeconds` for `forSeconds`, and the schedule's fires meanwhile are skipped, so Temporal's list holds one run
 * every few minutes under npm start, not one per 5-second round (17,280 a day, which buried the tasks there).
 */
const t = useTestContext({ worker: true, edge: false });

describe('the host watch', () => {
  it('does its rounds in one run: the fires meanwhile start nothing, and the next run follows within a round', async () => {
    const handle = t.deps.temporal.schedule.getHandle(hostWatchScheduleId(t.config.taskQueue));
    await ensureHostWatchSchedule(t.deps.temporal, t.config.taskQueue, { everySeconds: 1, forSeconds: 4 });
    try {
      const first = await until('the first run', async () => (await handle.describe()).info.recentActions[0], {
        timeoutMs: 20_000,
      });
      const result = await t.deps.temporal.workflow.getHandle(first.action.workflow.workflowId).result();
      expect(result.rounds).toBeGreaterThanOrEqual(3);
      expect(result).toMatchObject({ lost: [], drained: [], rejoined: [], orphaned: [] });
      // a fire every second during the run's four: skipped, not started
      const info = (await handle.describe()).info;
      expect(info.numActionsSkippedOverlap).toBeGreaterThanOrEqual(2);
      // the next run starts at the next fire after this one ended
      const second = await until(
        'the second run',
        async () =>
          (await handle.describe()).info.recentActions.find(
            (a) => a.action.workflow.workflowId !== first.action.workflow.workflowId,
          ),
        { timeoutMs: 10_000 },
      );
      expect(second.takenAt.getTime() - first.takenAt.getTime()).toBeLessThan(4_000 + 3_000);
      // a run by hand, with no arguments (as a schedule made before): one round
      const once = await t.deps.temporal.workflow.execute('watchHosts', {
        taskQueue: t.config.taskQueue,
        workflowId: `host-watch-once-${t.config.taskQueue}`,
      });
      expect(once.rounds).toBe(1);
    } finally {
      await stopHostWatch(t);
    }
  });
});
