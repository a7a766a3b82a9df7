import type { ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { killAndWait, spawnSystemProcess, stopChildren } from '../helpers/processes';
import { createDeployWorld, fetchEnvironment, waitForTask } from '../helpers/deploy-fixtures';

// The worker runs as its own process (as in production) so that it can be killed with SIGKILL.
const t = useTestContext({ edge: true });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
const children: ChildProcess[] = [];

function startWorkerProcess(): ChildProcess {
  const child = spawnSystemProcess(t, 'processes/worker.ts');
  children.push(child);
  return child;
}

beforeAll(async () => {
  w = await createDeployWorld(t);
  writeFileSync(w.repo.gate, '');
});

afterAll(async () => {
  writeFileSync(w.repo.gate, ''); // lets an orphaned build step end
  await stopChildren(children);
});

// The kill may land during the first attempt's git fetch or checkout: git, not sandboxed, runs on as an
// orphan for a moment. The retried build checks out again after fetching once more (provider/git.ts).
describe('a worker killed in the middle of a build', () => {
  it('ends the task correctly after the worker restarts, and puts the release live once', async () => {
    const first = startWorkerProcess();
    const v1 = await w.api.post(`/environments/${w.environment.id}/deploy`);
    expect(v1.status).toBe(202);
    expect((await waitForTask(t, w.api, v1.body.id, { timeoutMs: 60_000 })).status).toBe('succeeded');
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v1' });

    rmSync(w.repo.gate);
    w.repo.commit('v2', { gated: true });
    const v2 = await w.api.post(`/environments/${w.environment.id}/deploy`);
    expect(v2.status).toBe(202);
    await waitForTask(t, w.api, v2.body.id, { until: (x) => x.status === 'running' });
    await killAndWait(first, 'SIGKILL');

    startWorkerProcess();
    writeFileSync(w.repo.gate, '');
    const done = await waitForTask(t, w.api, v2.body.id, { timeoutMs: 60_000 });
    expect(done.status, done.error ?? '').toBe('succeeded');
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v2' });

    const deployments = await t.deps.knex('deployments').where({ environment_id: w.environment.id });
    expect(deployments.map((d) => d.task_id).sort()).toEqual([v1.body.id, v2.body.id].sort());
    const webLog = readFileSync(path.join(t.dataDir, 'environments', w.environment.id, 'web.log'), 'utf8');
    const starts = webLog.split('\n').filter((l) => l.includes(`release ${done.result.release_id}: starting`));
    expect(starts).toHaveLength(1);
    expect(w.repo.deployRuns()).toBe(2);
  });
});
