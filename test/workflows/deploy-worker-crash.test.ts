import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { childReport, killAndWait, spawnSystemProcess, stopChildren, webLeaves } from '../helpers/processes';
import {
  commitServer,
  createDeployWorld,
  fetchEnvironment,
  heldVolumeApp,
  taskLog,
  waitForTask,
} from '../helpers/deploy-fixtures';
import { until } from '../helpers/until';
import { atRealHeartbeatTimeouts, scheduledHeartbeatTimeouts, SHORT_HEARTBEAT_ENV } from '../helpers/heartbeats';
import { sessionAgent } from '../helpers/fixtures';
import { createEnvironmentMachines } from '../../api/machines/service';
import { makeStorageRoots } from '../helpers/storage-roots';

// The worker runs as its own process (as in production) so that it can be killed with SIGKILL. A killed
// worker's activities are retried after a shortened heartbeat timeout, but in the build's test (the real one).
const t = useTestContext({ edge: true, env: SHORT_HEARTBEAT_ENV });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
const children: ChildProcess[] = [];
let roots: [string, string];

function startWorkerProcess(env: Record<string, string> = {}): ChildProcess {
  const child = spawnSystemProcess(t, 'processes/worker.ts', { STORAGE_ROOTS: roots.join(','), ...env });
  children.push(child);
  return child;
}

beforeAll(async () => {
  roots = makeStorageRoots(t);
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
  atRealHeartbeatTimeouts(t);
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

    const resumed = Date.now();
    startWorkerProcess();
    writeFileSync(w.repo.gate, '');
    const done = await waitForTask(t, w.api, v2.body.id, { timeoutMs: 60_000 });
    expect(done.status, done.error ?? '').toBe('succeeded');
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v2' });

    // its phases survived the restart, in order, each once; the build and what followed ran on the new worker
    const phases = await until(
      'the old instance to stop',
      async () => (await w.api.get(`/tasks/${v2.body.id}`)).body.phases as { name: string; at: string }[],
      (list) => list.some((p) => p.name === 'old_stopped'),
      30_000,
    );
    expect(phases.map((p) => p.name)).toEqual([
      'queued',
      'started',
      'build_done',
      'release_ready',
      'process_started',
      'healthy',
      'edge_switched',
      'old_stopped',
    ]);
    const at = Object.fromEntries(phases.map((p) => [p.name, Date.parse(p.at)]));
    expect(at.started).toBeLessThan(resumed);
    for (const name of ['build_done', 'release_ready', 'process_started', 'healthy', 'edge_switched'])
      expect(at[name], name).toBeGreaterThanOrEqual(resumed);

    const deployments = await t.deps.knex('deployments').where({ environment_id: w.environment.id });
    expect(deployments.map((d) => d.task_id).sort()).toEqual([v1.body.id, v2.body.id].sort());
    const webLog = readFileSync(path.join(t.dataDir, 'environments', w.environment.id, 'web.log'), 'utf8');
    const starts = webLog.split('\n').filter((l) => l.includes(`release ${done.result.release_id}: starting`));
    expect(starts).toHaveLength(1);
    expect(w.repo.deployRuns()).toBe(2);
    // the build ran with the real heartbeat timeout (the `heartbeating` profile's)
    const timeouts = await scheduledHeartbeatTimeouts(t, v2.body.id);
    expect(timeouts).toContain(10);
    expect(timeouts).not.toContain(4);
    // two deploys, a worker's restart and a real heartbeat timeout: its waits alone allow 150 s, as its siblings'
  }, 240_000);
});

const holdFile = () => path.join(path.dirname(w.repo.gate), 'hold');

// A worker stopped on purpose (npm start's stop, a restart by its supervisor) while restarts of an environment wait
// for their new instance's health: it does not work through them first (each could wait its 60 s health timeout).
describe('a worker stopped (SIGTERM) while variables are applied and a server reboots', () => {
  it('stops without waiting for the restarts; the next worker runs each of them again', async () => {
    const env = `/environments/${w.environment.id}`;
    const hold = holdFile();
    commitServer(w.repo, heldVolumeApp(hold, 'v3'), 'v3: health held');
    const v3 = await w.api.post(`${env}/deploy`);
    expect(v3.status).toBe(202);
    expect((await waitForTask(t, w.api, v3.body.id, { timeoutMs: 60_000 })).status).toBe('succeeded');

    // its web server (the API's environment creation makes it; the fixture inserts the row alone)
    await t.deps.knex.transaction((trx) => createEnvironmentMachines(trx, t.deps, w.environment));
    const owner = await sessionAgent(t, w.owner); // these take a person signed in
    const server = (await owner.get(`/servers?team=${w.team.id}`)).body.data.find(
      (s: { environment_id: string; role: string }) => s.environment_id === w.environment.id && s.role === 'web',
    );

    writeFileSync(hold, '');
    const applies: string[] = [];
    for (const path of [`${env}/variables/apply`, `/servers/${server.id}/reboot`, `${env}/variables/apply`]) {
      const res = await owner.post(path);
      expect(res.status, res.text).toBe(202);
      applies.push(res.body.id);
    }
    // All three run (apply_variables and reboot are not kept apart from each other); one restarts, the others
    // wait their turn.
    for (const id of applies) await waitForTask(t, w.api, id, { until: (x) => x.status === 'running' });
    const logs = () => Promise.all(applies.map((id) => taskLog(t, w.api, id)));
    await until('a restart to start its new instance', logs, (all) => all.some((l) => l.includes('Started "node')));

    const worker = children.at(-1)!;
    const exited = new Promise<'exited'>((r) => worker.once('exit', () => r('exited')));
    process.kill(-worker.pid!, 'SIGTERM');
    // Well inside one restart's health timeout (60 s): the worker did not wait for any of them.
    const timer = new Promise<'still running'>((r) => setTimeout(() => r('still running'), 40_000).unref());
    expect(await Promise.race([exited, timer]), childReport(worker)).toBe('exited');
    // it stopped as asked (its stop handler ran to its exit), not by the signal's default action
    expect(worker.exitCode, childReport(worker)).toBe(0);
    expect(existsSync(hold)).toBe(true);
    const said = (await logs()).join('\n');
    expect(said, childReport(worker)).toContain('the task was cancelled or its worker is stopping');
    for (const id of applies) expect((await w.api.get(`/tasks/${id}`)).body.status).toBe('running');

    rmSync(hold);
    startWorkerProcess();
    for (const id of applies) {
      const done = await waitForTask(t, w.api, id, { timeoutMs: 90_000 });
      expect(done.status, `${done.error ?? ''}\n${await taskLog(t, w.api, id)}`).toBe('succeeded');
      expect(done.result).toMatchObject(done.type === 'reboot' ? { instances_restarted: 1 } : { restarted: true });
    }
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v3' });
  }, 240_000);
});

// The attack this answers: a storage move switches the disk (the database row) and then starts the web process on
// the new volume; a worker killed in between left current.json with the old VC_VOLUME_PATH, the next worker
// brought the app back on the old copy, and what it wrote there was lost when the old copy was discarded. The
// instance the killed worker had started on the new volume ran on too, unrecorded and unrouted, for good.
describe('a worker killed after a storage move switched the disk, before the app started on it', () => {
  it('the next worker starts the app on the new volume: nothing written afterwards is lost at discard', async () => {
    const env = `/environments/${w.environment.id}`;
    const owner = await sessionAgent(t, w.owner);
    const volumeAt = (root: string) => path.join(root, 'volumes', w.environment.id);
    const get = (p: string) => fetchEnvironment(w.environment.port, p);
    expect(await get('/where')).toEqual({ status: 200, text: volumeAt(roots[0]) });
    expect(await get('/put?name=before.txt&body=stored%20here')).toEqual({ status: 200, text: 'stored' });

    writeFileSync(holdFile(), '');
    const res = await owner.post(`${env}/storage/files/move`, { location: roots[1] });
    expect(res.status, res.text).toBe(202);
    const move = res.body.id;
    // switched, and the web process on the new volume waits for its health check
    await until(
      'the move to switch the disk and start the app on it',
      () => taskLog(t, owner, move),
      (log) =>
        log.includes('The files disk lives under') &&
        log.split('The files disk lives under')[1].includes('Started "node'),
      60_000,
    );
    await killAndWait(children.at(-1)!, 'SIGKILL');
    rmSync(holdFile());
    startWorkerProcess();
    const moved = await waitForTask(t, owner, move, { timeoutMs: 120_000 });
    expect(moved.status, `${moved.error ?? ''}\n${await taskLog(t, owner, move)}`).toBe('succeeded');
    const where = await until(
      'the app to answer again',
      () => get('/where'),
      (r) => r.status === 200,
      60_000,
    );
    expect(where.text).toBe(volumeAt(roots[1]));
    // and the instance the killed worker had started for the move, which nothing recorded, is gone: one instance
    await until(
      'one web instance',
      () => webLeaves(w.environment.id),
      (leaves) => leaves.length === 1,
      30_000,
    );

    expect(await get('/put?name=after.txt&body=stored%20here')).toEqual({ status: 200, text: 'stored' });
    const discard = await owner.post(`${env}/storage/discard`, { confirm: true });
    expect(discard.status, discard.text).toBe(202);
    expect((await waitForTask(t, owner, discard.body.id, { timeoutMs: 60_000 })).status).toBe('succeeded');
    expect(existsSync(volumeAt(roots[0]))).toBe(false);
    expect(await get('/get?name=after.txt')).toEqual({ status: 200, text: 'stored here' });
    expect(await get('/get?name=before.txt')).toEqual({ status: 200, text: 'stored here' });
    // the move's activities ran with the file's shortened heartbeat timeout
    const timeouts = await scheduledHeartbeatTimeouts(t, move);
    expect(timeouts).toContain(4);
    expect(timeouts).not.toContain(15);
    expect(timeouts).not.toContain(10);
  }, 240_000);
});

// Every host's worker polls the shared queues, so a host lost in the middle of a shared step (here a deploy's
// resolveRelease: the commit fetched, its release looked up) took the step with it. The task then waited for the
// step's start-to-close timeout (the `quick` profile's 3 minutes) and showed nothing meanwhile. The worker now
// heartbeats for every step scheduled with a heartbeat timeout (activities/toolkit/keep-alive.ts), and the next
// worker takes the step once that timeout (20 s, at its real value: this file's shortening leaves it alone) passed.
describe('a worker killed in the middle of a shared step whose own code does not heartbeat', () => {
  it('the next worker runs the step again after its heartbeat timeout, not its start-to-close timeout', async () => {
    await killAndWait(children.at(-1)!, 'SIGKILL');
    const hold = path.join(path.dirname(w.repo.gate), 'hold-resolve');
    writeFileSync(hold, '');
    const held = startWorkerProcess({ VC_FAULT_INJECT: `hold-activity:resolveRelease:${hold}` });
    w.repo.commit('v4');
    const deploy = await w.api.post(`/environments/${w.environment.id}/deploy`);
    expect(deploy.status, deploy.text).toBe(202);
    await until('the worker to hold the deploy step', () => existsSync(`${hold}.held`), { timeoutMs: 60_000 });
    await killAndWait(held, 'SIGKILL');
    const killedAt = Date.now();
    rmSync(hold);
    startWorkerProcess();
    const done = await waitForTask(t, w.api, deploy.body.id, { timeoutMs: 150_000 });
    expect(done.status, `${done.error ?? ''}\n${await taskLog(t, w.api, deploy.body.id)}`).toBe('succeeded');
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v4' });
    // the step was taken again after its 20 s heartbeat timeout: well before the 180 s of its start-to-close
    const took = (Date.now() - killedAt) / 1000;
    console.log(`worker killed in a shared step -> the deploy succeeded on the next worker: ${took.toFixed(1)} s`);
    expect(took).toBeLessThan(90);
    expect(await scheduledHeartbeatTimeouts(t, deploy.body.id)).toContain(20);
  }, 240_000);
});
