import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createTeam, createUser } from '../helpers/fixtures';
import { insertTask } from '../../db/queries/tasks';
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

  it('asks about every open task in turn: one ended outside the console behind 14 live ones is failed by the third round', async () => {
    const user = await createUser(t);
    const team = await createTeam(t, user);
    // 14 tasks whose workflows run (on a task queue nobody polls, so they stay running), then one whose workflow
    // Temporal no longer has; all two minutes old (the check asks about tasks once they are a minute old)
    const idle = `nobody-polls-${randomUUID()}`;
    const task = async (live: boolean) => {
      const id = randomUUID();
      const workflowId = `orphan-check-${id}`;
      if (live) await t.deps.temporal.workflow.start('deployEnvironment', { taskQueue: idle, workflowId, args: [] });
      await insertTask(t.deps.knex, {
        id,
        team_id: team.id,
        project_id: null,
        environment_id: null,
        kind: 'deployments',
        type: 'deploy',
        account_user_id: user.id,
        account_via: 'session',
        workflow_id: workflowId,
        params: {},
        created_at: new Date(Date.now() - 120_000).toISOString(),
      });
      return { id, workflowId };
    };
    const live: Array<{ id: string; workflowId: string }> = [];
    for (let i = 0; i < 14; i++) live.push(await task(true));
    const orphan = await task(false);
    try {
      const round = () =>
        t.deps.temporal.workflow.execute('watchHosts', {
          taskQueue: t.config.taskQueue,
          workflowId: `host-watch-${randomUUID()}`,
        });
      // five a round, in order: the orphan, fifteenth of the open tasks, is asked about in the third
      expect((await round()).orphaned).toEqual([]);
      expect((await round()).orphaned).toEqual([]);
      expect((await round()).orphaned).toEqual([orphan.id]);
      const rows = await t.deps.knex('tasks').whereIn('id', [...live.map((l) => l.id), orphan.id]);
      const status = Object.fromEntries(rows.map((r) => [r.id, r.status]));
      expect(status[orphan.id]).toBe('failed');
      expect(live.map((l) => status[l.id])).toEqual(live.map(() => 'pending'));
      // and it starts over after the last one: the live ones are asked about again, and stay open
      for (let i = 0; i < 3; i++) expect((await round()).orphaned).toEqual([]);
      expect(
        await t.deps
          .knex('tasks')
          .whereIn(
            'id',
            live.map((l) => l.id),
          )
          .where({ status: 'pending' })
          .count('* as n'),
      ).toEqual([{ n: 14 }]);
    } finally {
      await Promise.all(live.map((l) => t.deps.temporal.workflow.getHandle(l.workflowId).terminate('test over')));
    }
  });
});
