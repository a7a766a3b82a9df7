import { createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createDeployWorld, fetchEnvironment, taskLog, waitForTask } from '../../helpers/deploy-fixtures';
import { sessionAgent } from '../../helpers/fixtures';
import type { Agent } from '../../helpers/http';
import { workflowIds } from '../../../db/workflow-names';
import { until } from '../../helpers/until';

/** The poller looks every second here (AUTO_DEPLOY_POLL_SECONDS=1; 30 by default). */
const t = useTestContext({ worker: true, env: { AUTO_DEPLOY_POLL_SECONDS: '1' } });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let owner: Agent;

const deployTasks = async () =>
  t.deps
    .knex('tasks')
    .where({ environment_id: w.environment.id, type: 'deploy' })
    .orderBy('seq')
    .select('id', 'account_via', 'status');

/** Polls until `check` holds (or fails after the deadline with what it last saw). */
beforeAll(async () => {
  // v1 is gated: its build waits for the gate file (the push-during-a-deploy case below).
  w = await createDeployWorld(t, { gatedFirstCommit: true });
  owner = await sessionAgent(t, w.owner);
});

describe('auto_deploy', () => {
  it('runs one poller per task queue, started with the worker', async () => {
    const desc = await t.deps.temporal.workflow.getHandle(workflowIds.autoDeployPoller(t.config.taskQueue)).describe();
    expect(desc.status.name).toBe('RUNNING');
    expect(desc.type).toBe('pollAutoDeploys');
  });

  it('off: a commit on the git ref starts nothing', async () => {
    // Five poll intervals: were the environment looked at, a deploy would have started.
    await new Promise((r) => setTimeout(r, 5000));
    expect(await deployTasks()).toEqual([]);
    const env = await t.deps.knex('environments').where({ id: w.environment.id }).first();
    expect(env.auto_deploy_checked_at).toBeNull();
  });

  it('on: the head of the git ref is deployed within the poll interval, as a task via auto_deploy', async () => {
    const patched = await owner.patch(`/environments/${w.environment.id}`, { auto_deploy: true });
    expect(patched.status, patched.text).toBe(200);
    const [first] = await until('the first auto-deploy', deployTasks, (tasks) => tasks.length === 1, 60_000);
    expect(first.account_via).toBe('auto_deploy');
    const shown = await w.api.get(`/tasks/${first.id}`);
    expect(shown.body).toMatchObject({ type: 'deploy', account: { id: null, name: null, via: 'auto_deploy' } });

    // A push while that deploy runs (its build waits at the gate, v1 resolved): refused-if-busy, then
    // deployed after it.
    await until(
      'v1 resolved',
      () => taskLog(t, w.api, first.id),
      (log) => log.includes('which needs a build'), // the first line: its commit resolved, a build due
      60_000,
    );
    const v2 = w.repo.commit('v2');
    const signed = await owner.post(`/projects/${w.project.id}/repository`, { url: w.repo.dir });
    const body = JSON.stringify({ ref: 'refs/heads/main' });
    const hook = await t.agent().request('POST', `/hooks/git/${w.project.id}`, {
      rawBody: body,
      headers: {
        'content-type': 'application/json',
        'x-hub-signature-256': `sha256=${createHmac('sha256', signed.body.webhook_secret).update(body).digest('hex')}`,
      },
    });
    expect(hook.status, hook.text).toBe(202);
    expect(hook.body.data).toEqual([
      { environment_id: w.environment.id, status: 'busy', commit: v2, task_id: first.id },
    ]);
    writeFileSync(w.repo.gate, '');
    const done = await waitForTask(t, w.api, first.id, { timeoutMs: 90_000 });
    expect(done.status, done.error ?? '').toBe('succeeded');

    const tasks = await until('the deploy of the push made meanwhile', deployTasks, (ts) => ts.length === 2, 60_000);
    expect(tasks[1].account_via).toBe('auto_deploy');
    const second = await waitForTask(t, w.api, tasks[1].id, { timeoutMs: 90_000 });
    expect(second.status, second.error ?? '').toBe('succeeded');
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v2' });
  });

  it('deploys each new commit once: v3 goes live, then nothing more starts while the ref stays', async () => {
    w.repo.commit('v3');
    const tasks = await until('the deploy of v3', deployTasks, (ts) => ts.length === 3, 60_000);
    const task = await waitForTask(t, w.api, tasks[2].id, { timeoutMs: 90_000 });
    expect(task.status, task.error ?? '').toBe('succeeded');
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v3' });
    await new Promise((r) => setTimeout(r, 3000));
    expect(await deployTasks()).toHaveLength(3);
  });

  it('starts a failed commit once, not in a loop; the next push deploys again', async () => {
    w.repo.commit('v4', { buildSteps: ['exit 4'] });
    const tasks = await until('the deploy of v4', deployTasks, (ts) => ts.length === 4, 60_000);
    const failed = await waitForTask(t, w.api, tasks[3].id, { timeoutMs: 90_000 });
    expect(failed.status).toBe('failed');
    await new Promise((r) => setTimeout(r, 3000));
    expect(await deployTasks()).toHaveLength(4);
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v3' });
    w.repo.commit('v5');
    const after = await until('the deploy of v5', deployTasks, (ts) => ts.length === 5, 60_000);
    const ok = await waitForTask(t, w.api, after[4].id, { timeoutMs: 90_000 });
    expect(ok.status, ok.error ?? '').toBe('succeeded');
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v5' });
  });

  it('off again: a new commit is not deployed', async () => {
    const patched = await owner.patch(`/environments/${w.environment.id}`, { auto_deploy: false });
    expect(patched.status).toBe(200);
    w.repo.commit('v6');
    await new Promise((r) => setTimeout(r, 4000));
    expect(await deployTasks()).toHaveLength(5);
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v5' });
  });
});
