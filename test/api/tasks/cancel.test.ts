import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { createDeployWorld, createEnvironment, taskLog, waitForTask } from '../../helpers/deploy-fixtures';
import type { Agent } from '../../helpers/http';
import { until } from '../../helpers/until';

// One build slot: a build whose step waits for a gate file holds it, so the next build waits `pending`.
const t = useTestContext({ worker: true, edge: false, env: { BUILD_CONCURRENCY: '1' } });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let session: Agent;
let holder: string;
let waiting: string;

beforeAll(async () => {
  w = await createDeployWorld(t, { gatedFirstCommit: true });
  session = await sessionAgent(t, w.developer);
  const other = await createEnvironment(t, w.project, { name: 'staging' });
  const first = await w.api.post(`/environments/${w.environment.id}/build`);
  expect(first.status, first.text).toBe(202);
  holder = first.body.id;
  await waitForTask(t, w.api, holder, { until: (task) => task.status === 'running' });
  const second = await w.api.post(`/environments/${other.id}/build`);
  expect(second.status, second.text).toBe(202);
  waiting = second.body.id;
  // The second build has asked for the slot (its log says so) and waits.
  await until('the second build to ask for a slot', async () =>
    (await taskLog(t, w.api, waiting)).includes('Waiting for build capacity'),
  );
  expect((await w.api.get(`/tasks/${waiting}`)).body.status).toBe('pending');
});

afterAll(() => {
  writeFileSync(w.repo.gate, '');
});

describe('POST /tasks/{id}/cancel', () => {
  it('refuses a token with 403 token_not_allowed', async () => {
    const res = await w.api.post(`/tasks/${waiting}/cancel`);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('token_not_allowed');
  });

  it("refuses a viewer's session with 403 forbidden and leaves the task pending", async () => {
    const viewerUser = await t.deps.knex('memberships').where({ team_id: w.team.id, role: 'viewer' }).first('user_id');
    const viewer = await sessionAgent(t, await t.deps.knex('users').where({ id: viewerUser.user_id }).first());
    const res = await viewer.post(`/tasks/${waiting}/cancel`);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('forbidden');
    expect((await w.api.get(`/tasks/${waiting}`)).body.status).toBe('pending');
  });

  it("answers 404 for another team's task", async () => {
    const stranger = await createUser(t);
    await createTeam(t, stranger);
    const res = await (await sessionAgent(t, stranger)).post(`/tasks/${waiting}/cancel`);
    expect(res.status).toBe(404);
    expect((await session.post(`/tasks/${randomUUID()}/cancel`)).status).toBe(404);
  });

  it('refuses a running task with 409 task_not_cancellable naming its status', async () => {
    const res = await session.post(`/tasks/${holder}/cancel`);
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'task_not_cancellable', status: 'running' });
    expect(res.body.error.message).toMatch(/running/);
    expect((await w.api.get(`/tasks/${holder}`)).body.status).toBe('running');
  });

  it('cancels a pending task: 200 with the task cancelled, its workflow ends it and it never starts', async () => {
    const res = await session.post(`/tasks/${waiting}/cancel`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      id: waiting,
      status: 'cancelled',
      started_at: null,
      finished_at: expect.any(String),
    });
    // The workflow notices and writes its last line; the slot holder then finishes and the cancelled build never runs.
    await until('the workflow to end the cancelled task', async () =>
      (await taskLog(t, w.api, waiting)).includes('==> Cancelled'),
    );
    writeFileSync(w.repo.gate, '');
    const done = await waitForTask(t, w.api, holder);
    expect(done.status, done.error ?? '').toBe('succeeded');
    const after = await w.api.get(`/tasks/${waiting}`);
    expect(after.body).toMatchObject({ status: 'cancelled', started_at: null });
    expect(await taskLog(t, w.api, waiting)).not.toContain('==> Building');
    const desc = await t.deps.temporal.workflow.getHandle(after.body.workflow_id).describe();
    expect(desc.status.name).toBe('CANCELLED');
  });

  it('refuses to cancel it twice, and refuses a finished task, naming the status', async () => {
    const again = await session.post(`/tasks/${waiting}/cancel`);
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'task_not_cancellable', status: 'cancelled' });
    const finished = await session.post(`/tasks/${holder}/cancel`);
    expect(finished.status).toBe(409);
    expect(finished.body.error).toMatchObject({ code: 'task_not_cancellable', status: 'succeeded' });
  });

  it('lists the cancelled and the finished build with GET /tasks', async () => {
    const res = await w.api.get(`/tasks?team=${w.team.id}&type=build`);
    expect(res.body.data.map((x: { id: string; status: string }) => [x.id, x.status])).toEqual([
      [waiting, 'cancelled'],
      [holder, 'succeeded'],
    ]);
  });
});
