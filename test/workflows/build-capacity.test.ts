import { rmSync, writeFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createDeployWorld, taskLog, waitForTask } from '../helpers/deploy-fixtures';
import { sessionAgent } from '../helpers/fixtures';
import { allRoutes } from '../../api/routes';
import { cancelPendingTask } from '../../db/queries/tasks';
import { until } from '../helpers/until';

const t = useTestContext({ worker: true, edge: false, env: { BUILD_CONCURRENCY: '1' } });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
const url = () => `/environments/${w.environment.id}`;

beforeAll(async () => {
  w = await createDeployWorld(t, { gatedFirstCommit: true });
  rmSync(w.repo.gate, { force: true });
});

/** Waits until the workflow's build waits for a build slot (in the build queue: no free slot). */
async function waitQueued(workflowId: string) {
  await until(`a queued build of ${workflowId}`, () =>
    t.deps
      .knex('build_queue as q')
      .join('tasks as t', 't.id', 'q.task_id')
      .where('t.workflow_id', workflowId)
      .first('q.task_id'),
  );
}

/** Cancels a pending task as POST /tasks/{id}/cancel does (through the route once it exists). */
async function cancelTask(id: string, workflowId: string) {
  if (allRoutes().some((r) => r.method === 'post' && r.path === '/tasks/{id}/cancel')) {
    const agent = await sessionAgent(t, w.developer);
    const res = await agent.post(`/tasks/${id}/cancel`);
    expect(res.status, res.text).toBeLessThan(300);
    return;
  }
  expect(await cancelPendingTask(t.deps.knex, id)).toBe(true);
  await t.deps.temporal.workflow.getHandle(workflowId).cancel();
}

describe('POST /environments/{id}/build', () => {
  it('runs at most BUILD_CONCURRENCY builds; the others wait pending, and one cancelled while pending never starts', async () => {
    const first = await w.api.post(`${url()}/build`);
    expect(first.status, first.text).toBe(202);
    expect(first.body).toMatchObject({ type: 'build', kind: 'deployments', workflow_id: `build-${first.body.id}` });
    await waitForTask(t, w.api, first.body.id, { until: (x) => x.status === 'running' });

    const second = await w.api.post(`${url()}/build`);
    const third = await w.api.post(`${url()}/build`);
    expect([second.status, third.status]).toEqual([202, 202]);
    await waitQueued(second.body.workflow_id);
    await waitQueued(third.body.workflow_id);
    expect((await waitForTask(t, w.api, second.body.id, { until: () => true })).status).toBe('pending');

    await cancelTask(third.body.id, third.body.workflow_id);
    const cancelled = await waitForTask(t, w.api, third.body.id);
    expect(cancelled).toMatchObject({ status: 'cancelled', started_at: null });
    const handle = t.deps.temporal.workflow.getHandle(third.body.workflow_id);
    await handle.result().catch(() => undefined);
    const desc = await handle.describe();
    expect(desc.status.name).toBe('CANCELLED');

    writeFileSync(w.repo.gate, '');
    const done1 = await waitForTask(t, w.api, first.body.id);
    const done2 = await waitForTask(t, w.api, second.body.id);
    expect([done1.status, done2.status]).toEqual(['succeeded', 'succeeded']);
    expect(done2.result.commit_sha).toBe(done1.result.commit_sha);
    expect(new Date(done2.started_at!).getTime()).toBeGreaterThanOrEqual(new Date(done1.started_at!).getTime());
    expect(await taskLog(t, w.api, first.body.id)).toMatch(/==> Building main@[0-9a-f]{7}/);
    // a build does not put anything live
    const env = await t.deps.knex('environments').where({ id: w.environment.id }).first();
    expect(env.live_release_id).toBeNull();
    const releases = await t.deps.knex('releases').where({ environment_id: w.environment.id }).orderBy('created_at');
    expect(releases.map((r) => r.status).sort()).toEqual(['failed', 'ready', 'ready']);
  });
});
