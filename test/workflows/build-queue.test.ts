/**
 * Build capacity across the system, in request order (activities/deploys/build-gate.ts): two worker
 * processes serve the task queue, this test's in-process worker and a `processes/worker.ts` child, both with
 * BUILD_CONCURRENCY=1.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { temporal } from '@temporalio/proto';
import { useTestContext } from '../helpers/context';
import { killAndWait, spawnSystemProcess, stopChildren } from '../helpers/processes';
import { createDeployWorld, createEnvironment, waitForTask } from '../helpers/deploy-fixtures';
import { sessionAgent } from '../helpers/fixtures';
import { startWorker } from '../../processes/worker-runtime';
import { buildTaskQueue } from '../../db/workflow-names';
import { BUILD_SLOT_LOCK_KEY } from '../../activities/deploys/build-gate';
import { until } from '../helpers/until';

const t = useTestContext({ worker: true, edge: false, env: { BUILD_CONCURRENCY: '1' } });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let child: ChildProcess;
const children: ChildProcess[] = [];
const gates: string[] = [];

function startWorkerProcess(): ChildProcess {
  const c = spawnSystemProcess(t, 'processes/worker.ts', { BUILD_CONCURRENCY: '1' });
  children.push(c);
  return c;
}

/** Identities of the workers polling the builds task queue. */
async function buildPollers(): Promise<Set<string>> {
  const res = await t.deps.temporal.workflowService.describeTaskQueue({
    namespace: t.config.temporalNamespace,
    taskQueue: {
      name: buildTaskQueue(t.config.taskQueue),
      kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL,
    },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
  });
  return new Set((res.pollers ?? []).map((p) => p.identity ?? ''));
}

/** The worker that holds the task's build activity now (waiting for a slot or building). */
async function buildWorker(workflowId: string): Promise<string | undefined> {
  const d = await t.deps.temporal.workflow.getHandle(workflowId).describe();
  const a = (d.raw.pendingActivities ?? []).find((x) => x.activityType?.name === 'buildTaskRelease');
  return a?.lastWorkerIdentity || undefined;
}

const inQueue = async (taskId: string) => Boolean(await t.deps.knex('build_queue').where({ task_id: taskId }).first());
const status = async (taskId: string) =>
  (await t.deps.knex('tasks').where({ id: taskId }).first('status')).status as string;

async function requestBuild(world: typeof w, envName: string) {
  const env = await createEnvironment(t, world.project, { name: envName });
  const res = await world.api.post(`/environments/${env.id}/build`);
  expect(res.status, res.text).toBe(202);
  return res.body as { id: string; workflow_id: string };
}

/**
 * Samples the build tasks every 25 ms until stopped: how many are building at once (task `running`, its
 * release still `building`: a build ends when its release is ready or failed, before its slot is given
 * back) and the statuses seen.
 */
function sampleBuilds() {
  const samples: Array<{ building: number; statuses: Record<string, string> }> = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const rows: Array<{ id: string; status: string; release_status: string | null }> = await t.deps
        .knex('tasks as t')
        .leftJoin('releases as r', 'r.task_id', 't.id')
        .where('t.type', 'build')
        .select('t.id', 't.status', 'r.status as release_status');
      samples.push({
        building: rows.filter((r) => r.status === 'running' && r.release_status === 'building').length,
        statuses: Object.fromEntries(rows.map((r) => [r.id, r.status])),
      });
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return samples;
    },
  };
}

/** The builds' start and end, in request (seq) order. */
async function startsAndEnds(taskIds: string[]) {
  return t.deps
    .knex('tasks as t')
    .join('releases as r', 'r.task_id', 't.id')
    .whereIn('t.id', taskIds)
    .orderBy('t.seq')
    .select('t.id', 't.seq', 't.started_at', 'r.built_at');
}

beforeAll(async () => {
  w = await createDeployWorld(t);
  gates.push(w.repo.gate);
  const before = (await buildPollers()).size;
  child = startWorkerProcess();
  await until('the child worker to poll the builds queue', async () => (await buildPollers()).size > before, 60_000);
});

afterAll(async () => {
  for (const g of gates) writeFileSync(g, ''); // lets orphaned build steps end
  await stopChildren(children);
});

describe('build capacity across the system (BUILD_CONCURRENCY=1)', () => {
  it('starts builds in request order; the later ones stay pending until their turn', async () => {
    rmSync(w.repo.gate, { force: true });
    w.repo.commit('v2', { gated: true, buildSteps: ['sleep 0.4'] });
    const a = await requestBuild(w, 'order-a');
    await waitForTask(t, w.api, a.id, { until: (x) => x.status === 'running' });
    const b = await requestBuild(w, 'order-b');
    await until('B to wait for a slot', () => inQueue(b.id));
    const c = await requestBuild(w, 'order-c');
    await until('C to wait for a slot', () => inQueue(c.id));
    expect([await status(b.id), await status(c.id)]).toEqual(['pending', 'pending']);

    const sampler = sampleBuilds();
    writeFileSync(w.repo.gate, '');
    for (const x of [a, b, c]) expect((await waitForTask(t, w.api, x.id)).status).toBe('succeeded');
    const samples = await sampler.stop();

    expect(Math.max(...samples.map((s) => s.building))).toBeLessThanOrEqual(1);
    const started = (s: (typeof samples)[number], id: string) => s.statuses[id] !== 'pending';
    for (const s of samples) {
      if (started(s, c.id)) expect(started(s, b.id)).toBe(true);
      if (started(s, b.id)) expect(started(s, a.id)).toBe(true);
    }
    // B ran while C still waited
    expect(samples.some((s) => s.statuses[b.id] === 'running' && s.statuses[c.id] === 'pending')).toBe(true);
    const rows = await startsAndEnds([a.id, b.id, c.id]);
    expect(rows.map((r) => r.id)).toEqual([a.id, b.id, c.id]);
    for (let i = 1; i < rows.length; i++) {
      expect(rows[i].started_at.getTime()).toBeGreaterThanOrEqual(rows[i - 1].built_at.getTime());
    }
  });

  it('a build cancelled while it waits for a slot: its release has failed when the cancel answers', async () => {
    rmSync(w.repo.gate, { force: true });
    w.repo.commit('v2c', { gated: true });
    const a = await requestBuild(w, 'cancel-a');
    await waitForTask(t, w.api, a.id, { until: (x) => x.status === 'running' });
    const b = await requestBuild(w, 'cancel-b');
    await until('B to wait for a slot', () => inQueue(b.id));
    const release = await t.deps.knex('releases').where({ task_id: b.id }).first('id', 'status');
    expect(release.status).toBe('building');
    const owner = await sessionAgent(t, w.owner);
    const cancelled = await owner.post(`/tasks/${b.id}/cancel`);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    // the very next read: not a release still building for a task that will never build it
    const listed = (await w.api.get(`/projects/${w.project.id}/releases`)).body.data;
    expect(listed.find((r: { id: string }) => r.id === release.id)).toMatchObject({ status: 'failed' });
    writeFileSync(w.repo.gate, '');
    expect((await waitForTask(t, w.api, a.id)).status).toBe('succeeded');
    expect((await waitForTask(t, w.api, b.id)).status).toBe('cancelled');
    expect((await t.deps.knex('releases').where({ task_id: b.id }).first('status')).status).toBe('failed');
  });

  it('never runs more than BUILD_CONCURRENCY builds at once with two worker processes, in request order', async () => {
    rmSync(w.repo.gate, { force: true });
    w.repo.commit('v3', { gated: true, buildSteps: ['sleep 0.2'] });
    const first = await requestBuild(w, 'cap-0');
    await waitForTask(t, w.api, first.id, { until: (x) => x.status === 'running' });
    const holder = await until('the worker of the first build', () => buildWorker(first.workflow_id));

    // Builds until one waits on the other worker process than the one holding the slot.
    const waiting: Array<{ id: string; workflow_id: string }> = [];
    let elsewhere: string | undefined;
    for (let i = 1; i <= 12 && !elsewhere; i++) {
      const x = await requestBuild(w, `cap-${i}`);
      waiting.push(x);
      await until('the build to wait for a slot', () => inQueue(x.id));
      const worker = await until('its worker', () => buildWorker(x.workflow_id));
      if (worker !== holder) elsewhere = x.id;
    }
    expect(elsewhere, 'no build was taken by the other worker process').toBeDefined();

    const sampler = sampleBuilds();
    // While the first build holds the only slot, none of the others starts, whichever process took it.
    const watchUntil = Date.now() + 1000;
    while (Date.now() < watchUntil) {
      for (const x of waiting) expect(await status(x.id)).toBe('pending');
      await new Promise((r) => setTimeout(r, 50));
    }
    writeFileSync(w.repo.gate, '');
    const all = [first, ...waiting];
    for (const x of all) expect((await waitForTask(t, w.api, x.id)).status).toBe('succeeded');
    const samples = await sampler.stop();

    expect(samples.length).toBeGreaterThan(10);
    expect(Math.max(...samples.map((s) => s.building))).toBe(1);
    // One after the other, in request order: each starts once the one before it has been built.
    const rows = await startsAndEnds(all.map((x) => x.id));
    for (let i = 1; i < rows.length; i++) {
      expect(rows[i].started_at.getTime()).toBeGreaterThanOrEqual(rows[i - 1].built_at.getTime());
    }
  });

  it('frees the slot of a worker killed while it builds at once; the killed build is retried elsewhere and ends', async () => {
    // Only the child serves the task queue while the slow build starts, so the child holds the slot.
    await t.worker!.shutdown();
    const slow = await createDeployWorld(t, { gatedFirstCommit: true });
    gates.push(slow.repo.gate);
    rmSync(slow.repo.gate, { force: true });
    const held = await requestBuild(slow, 'killed');
    await waitForTask(t, slow.api, held.id, { until: (x) => x.status === 'running' });
    t.worker = await startWorker(t.deps, {
      workflowBundle: { code: readFileSync(inject('workflowBundlePath'), 'utf8') },
    });
    const here = t.worker.worker.options.identity;

    // A build waiting on this process (those the child took are cancelled: they would die with it).
    w.repo.commit('v4');
    const session = await sessionAgent(t, w.developer);
    let next: { id: string; workflow_id: string } | undefined;
    for (let i = 0; i < 12 && !next; i++) {
      const x = await requestBuild(w, `after-kill-${i}`);
      await until('the build to wait for a slot', () => inQueue(x.id));
      if ((await until('its worker', () => buildWorker(x.workflow_id))) === here) next = x;
      else expect((await session.post(`/tasks/${x.id}/cancel`)).status).toBe(200);
    }
    expect(next, 'no build was taken by this process').toBeDefined();
    expect(await status(next!.id)).toBe('pending');

    await killAndWait(child, 'SIGKILL');
    const killedAt = Date.now();
    // The dead worker's connection is gone and its slot with it: the next build starts well before the
    // killed build's activity times out (heartbeat timeout 10 s).
    await waitForTask(t, w.api, next!.id, { until: (x) => x.status !== 'pending', timeoutMs: 20_000 });
    expect(Date.now() - killedAt).toBeLessThan(8_000);
    expect((await waitForTask(t, w.api, next!.id)).status).toBe('succeeded');

    // The killed build's activity times out and is retried on the remaining worker, which builds it.
    writeFileSync(slow.repo.gate, '');
    const retried = await waitForTask(t, slow.api, held.id, { timeoutMs: 40_000 });
    expect(retried.status, retried.error ?? '').toBe('succeeded');
    expect(Date.now() - killedAt).toBeLessThan(40_000);
    // No row is left in line: the builds cancelled above whose waiting activity was on the killed child end
    // once that activity times out (their workflow's finishTask removes the row), so the line empties then.
    await until(
      'the build queue to empty',
      async () => (await t.deps.knex('build_queue').count({ n: '*' }).first()) as { n: number },
      (r) => Number(r.n) === 0,
      30_000,
    );
    const locks = await t.deps.knex.raw(
      `SELECT count(*)::int AS n FROM pg_locks
        WHERE locktype = 'advisory' AND classid = ?::oid AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      [BUILD_SLOT_LOCK_KEY],
    );
    expect(locks.rows[0].n).toBe(0);
  });
});
