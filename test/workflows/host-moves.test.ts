/**
 * Moving environments between hosts (CONTRACT "Hosts", issue 26 items 7 and 8), with two hosts: the file's own
 * (its in-process worker, `t.config.hostName`) and a worker process for another (HOST_NAME below, its own sandbox
 * tag, SANDBOX_NETWORK block and INSTANCE_PORTS, and STORAGE_ROOTS of its own: a volume moved between them is
 * copied). It shares the file's DATA_DIR (and so its release store directory), and the edge reaches both hosts'
 * sandboxes on this machine.
 *
 * Proved: a move of a stateless environment answers every request meanwhile and stops the old instance; a drain
 * (`npm run hosts -- drain`) moves every environment and ends `drained`, `undrain` opens it; a lost host's
 * stateless environment answers from the other host within 60 s of the loss (HOST_LOST_SECONDS 3), its stateful
 * one is `host_lost` and the edge answers it 503; `evacuate` lists it; the host rejoining stops its stale
 * instances and comes back `drained`; a drain of a host holding an environment whose volume holds a file copies
 * the volume through the release store (none of it left there), the app reads the file on the new host, the old
 * copy is deleted, and the host ends `drained`; a move that fails after that copy (the app does not start on the new
 * host) leaves the environment serving from its host with its data, the task `failed` saying so and what to do,
 * and nothing of it on the other host or in the store; a sync into an environment on the other host from one on
 * this host copies the source's files through the store (the target's own files replaced, none left in the store),
 * and the API offers the other host's environment as a sync source and shows its volume's size, from its samples;
 * the old copy a storage move left on the other host is discarded there (its queue, as both hosts share this disk).
 */
import type { ChildProcess } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import {
  commitServer,
  createSharedAppRepo,
  fetchEnvironment,
  heldVolumeApp,
  taskLog,
  waitForTask,
} from '../helpers/deploy-fixtures';
import { killAndWait, spawnSystemProcess, stopChildren } from '../helpers/processes';
import { until } from '../helpers/until';
import { startS3 } from '../helpers/s3';
import type { Agent } from '../helpers/http';
import { startMove } from '../../core/host-moves';
import { ensureHostWatchSchedule, hostWatchScheduleId } from '../../core/schedules';
import { listHosts } from '../../db/queries/hosts';
import { environmentVolume, volumePath } from '../../db/queries/storage';
import { hostTag } from '../../host/provider/host-identity';
import { hostWatchDiagnosis, instancesOn, removeHostNetworks, runHostsCli } from '../helpers/host-moves';
import { testPortSlot } from '../helpers/test-workers';
import { hostTaskQueue } from '../../system/task-queues';

const LOST = 3;
const t = useTestContext({
  worker: true,
  smtp: true,
  // the snapshots' S3 store (s3rver) is on loopback
  env: { HOST_LOST_SECONDS: String(LOST), RESOURCE_SAMPLE_SECONDS: '1', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' },
});
const slot = testPortSlot();
const hostsCli = (...args: string[]) => runHostsCli(t, LOST, ...args);
/** The second host: a name of this file's own (its cgroup subtree and sandbox tag are named after it). */
let other: string;
let here: string;
const children: ChildProcess[] = [];
let agent: Agent;
let owner: Awaited<ReturnType<typeof createUser>>;
let team: Awaited<ReturnType<typeof createTeam>>;
let project: { id: string; team_id: string };
let volumeProject: { id: string; team_id: string };
let s3: Awaited<ReturnType<typeof startS3>>;
/** The second host's STORAGE_ROOTS: its volumes are apart from the file's host's. */
let otherRoot: string;
let otherRoot2: string;
/** While this file exists, the second host holds the host watch rounds it takes (VC_FAULT_INJECT hold-activity). */
let holdSweep: string;

function startOtherHost(): ChildProcess {
  const child = spawnSystemProcess(t, 'processes/worker.ts', {
    HOST_NAME: other,
    // its own block of sandbox addresses (the file's host has the default 10.200.0.0/14)
    SANDBOX_NETWORK: `10.${120 + (slot % 8) * 4}.0.0/14`,
    HOST_LOST_SECONDS: String(LOST),
    RESOURCE_SAMPLE_SECONDS: '1',
    STORAGE_ROOTS: `${otherRoot},${otherRoot2}`,
    // its own INSTANCE_PORTS (instances are reached at HOST_ADDRESS:<instance port>, and both hosts are this
    // machine): between the tests' environment ports (up to 31799) and second-host.ts's (32000 on)
    INSTANCE_PORTS: `${31800 + slot * 11}-${31800 + slot * 11 + 10}`,
    // more room than the file's host: new environments land here
    HOST_CAPACITY: 'cpu=1000,memory_mb=20000000,disk_gb=1000000',
    SMTP_URL: t.smtp!.url,
    // holds the host watch rounds it takes while holdSweep exists (activities/toolkit/keep-alive.ts)
    VC_FAULT_INJECT: `hold-activity:sweepHosts:${holdSweep}`,
  });
  children.push(child);
  return child;
}

const hostsNow = () => listHosts(t.deps.knex, LOST);
const statusOf = async (name: string) => (await hostsNow()).find((h) => h.name === name)?.status;
const placement = async (envId: string) =>
  (await t.deps.knex('servers').where({ environment_id: envId, role: 'web' }).first()) as {
    host: string;
    status: string;
  };

async function deployedEnvironment(
  name: string,
  projectId = project.id,
): Promise<{ id: string; port: number; name: string }> {
  const res = await agent.post(`/projects/${projectId}/environments`, { name, git_ref: 'main' });
  expect(res.status, res.text).toBe(201);
  const deploy = await agent.post(`/environments/${res.body.id}/deploy`);
  expect(deploy.status, deploy.text).toBe(202);
  const task = await waitForTask(t, agent, deploy.body.id, { timeoutMs: 90_000 });
  expect(task.status, `${task.error}\n${await taskLog(t, agent, task.id)}`).toBe('succeeded');
  const env = await t.deps.knex('environments').where({ id: res.body.id }).first('id', 'port', 'name');
  expect(await fetchEnvironment(env.port)).toEqual({ status: 200, text: 'v1' });
  return env;
}

const envRef = (env: { id: string; name: string }) => ({
  environment_id: env.id,
  team_id: project.team_id,
  project_id: project.id,
  name: env.name,
});

/** The newest move task of the environment. */
const newestMove = (envId: string) =>
  t.deps.knex('tasks').where({ environment_id: envId, type: 'move' }).orderBy('created_at', 'desc').first();

/** A wait on the host watch's work: a timeout also says what the watch was doing (hostWatchDiagnosis). */
async function untilWatched<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  o: { timeoutMs: number; detail?: () => string },
): Promise<T> {
  try {
    return await until(what, fn, o);
  } catch (err) {
    const diagnosis = await hostWatchDiagnosis(t, hostWatchScheduleId(t.config.taskQueue));
    throw new Error(`${(err as Error).message}\n${diagnosis}`);
  }
}

beforeAll(async () => {
  here = t.config.hostName;
  other = `moves-${t.config.taskQueue.slice(-8)}`;
  const repo = createSharedAppRepo();
  repo.commit('v1');
  owner = await createUser(t);
  s3 = await startS3();
  team = await createTeam(t, owner);
  project = await createProject(t, team, { repository_url: repo.dir });
  // an app that stores a file in its volume and reads it back (`/put`, `/get`)
  const volumeRepo = createSharedAppRepo();
  volumeRepo.commit('v1');
  commitServer(volumeRepo, heldVolumeApp(path.join(volumeRepo.gate, 'never'), 'v1'), 'volume app');
  volumeProject = await createProject(t, team, { name: 'volumes', repository_url: volumeRepo.dir });
  agent = await sessionAgent(t, owner);
  const base = mkdtempSync(path.join(t.dataDir, '..', 'roots-b-'));
  chmodSync(base, 0o711);
  otherRoot = path.join(base, 'disks');
  otherRoot2 = path.join(base, 'disks-2');
  holdSweep = path.join(base, 'hold-sweep');
  mkdirSync(otherRoot, { mode: 0o755 });
  mkdirSync(otherRoot2, { mode: 0o755 });
  startOtherHost();
  await until('the second host to join', async () => (await statusOf(other)) === 'ready', { timeoutMs: 60_000 });
  // the host watch, as npm start's worker runs it (every 5 s there), every second here
  await ensureHostWatchSchedule(t.deps.temporal, t.config.taskQueue, '1s');
}, 120_000);

afterAll(async () => {
  await t.deps.temporal.schedule
    .getHandle(hostWatchScheduleId(t.config.taskQueue))
    .delete()
    .catch(() => undefined);
  await stopChildren(children);
  await s3?.stop();
  removeHostNetworks(hostTag(other));
});

describe('moving environments between hosts', () => {
  let one: { id: string; port: number; name: string };
  let two: { id: string; port: number; name: string };

  it('a move starts the environment on the other host, switches the edge with no failed request, then stops the old instance', async () => {
    one = await deployedEnvironment('one');
    const from = (await placement(one.id)).host;
    expect(from).toBe(other); // the host with the most free memory
    const before = (await fetchEnvironment(one.port, '/boot')).text;
    expect(instancesOn(other, one.id).length).toBe(1);

    // requests all along the move, one after another
    const answers: Array<{ status: number; text: string } | string> = [];
    let polling = true;
    const poller = (async () => {
      while (polling) answers.push(await fetchEnvironment(one.port).catch((e: Error) => e.message));
    })();
    const started = await startMove(t.deps, envRef(one), 'drain');
    expect(started).toHaveProperty('taskId');
    const taskId = (started as { taskId: string }).taskId;
    const task = await waitForTask(t, agent, taskId, { timeoutMs: 60_000 });
    const log = await taskLog(t, agent, taskId);
    expect(task.status, `${task.error}\n${log}`).toBe('succeeded');
    await until('the old instance to stop', () => instancesOn(other, one.id).length === 0, { timeoutMs: 20_000 });
    polling = false;
    await poller;

    expect(answers.length).toBeGreaterThan(10);
    expect(
      answers.filter((a) => typeof a === 'string' || a.status !== 200 || a.text !== 'v1'),
      log,
    ).toEqual([]);
    expect((await placement(one.id)).host).toBe(here);
    expect((await fetchEnvironment(one.port, '/boot')).text).not.toBe(before); // a new process answers
    expect(instancesOn(here, one.id).length).toBe(1);
    // the team's task: machines/move via system, with phases; host names are the operator's
    const row = await t.deps.knex('tasks').where({ id: taskId }).first();
    expect(row).toMatchObject({ kind: 'machines', type: 'move', account_via: 'system' });
    const phases = await until('old_stopped', async () => {
      const res = await agent.get(`/tasks/${taskId}`);
      const names = (res.body.phases as Array<{ name: string }>).map((p) => p.name);
      return names.includes('old_stopped') && names;
    });
    expect(phases).toEqual(expect.arrayContaining(['started', 'release_ready', 'healthy', 'edge_switched']));
    expect(log).toContain('now runs on another machine');
    expect(log).not.toContain(other);
    expect(log).not.toContain(here);
  }, 180_000);

  it('drain moves every environment off a host, which ends drained; undrain opens it again', async () => {
    two = await deployedEnvironment('two');
    expect((await placement(two.id)).host).toBe(other);
    const drained = await hostsCli('drain', here);
    expect(drained.code, drained.stderr).toBe(0);
    expect(drained.stdout).toContain(`Host ${here} is draining`);
    expect(drained.stdout).toMatch(/one: moving \(task /);
    await until('the drained host', async () => (await statusOf(here)) === 'drained', { timeoutMs: 90_000 });
    expect((await placement(one.id)).host).toBe(other);
    expect((await newestMove(one.id)).status).toBe('succeeded');
    expect(await fetchEnvironment(one.port)).toEqual({ status: 200, text: 'v1' });
    await until('the old instance to stop', () => instancesOn(here, one.id).length === 0, { timeoutMs: 20_000 });

    const undrained = await hostsCli('undrain', here);
    expect(undrained.code, undrained.stderr).toBe(0);
    expect(await statusOf(here)).toBe('ready');
  }, 240_000);

  let staleOne: string[] = [];
  let staleTwo: string[] = [];
  let lostAt = 0;

  it(`a lost host's stateless environment answers from the other host within 60 s; a stateful one is host_lost and answers 503`, async () => {
    // `two` holds data in its volume; the other host's sampler says so (and that `one`'s is empty)
    const volume = await environmentVolume(t.deps.knex, [otherRoot], two.id);
    mkdirSync(volume, { recursive: true });
    writeFileSync(path.join(volume, 'upload.txt'), 'kept here');
    const sampled = (envId: string, held: boolean) =>
      t.deps
        .knex('resource_samples')
        .where({ environment_id: envId })
        .where('volume_bytes', held ? '>' : '=', 0)
        .where('at', '>', t.deps.knex.raw("now() - interval '5 seconds'"))
        .first();
    await until('samples of both', async () => (await sampled(two.id, true)) && (await sampled(one.id, false)), {
      timeoutMs: 30_000,
    });
    staleOne = instancesOn(other, one.id);
    expect(staleOne.length).toBe(1);
    staleTwo = instancesOn(other, two.id);
    expect(staleTwo.length).toBe(1);
    // a snapshot of two (taken on its host, to S3), then a write after it: what an evacuation loses
    const dest = await s3Destination('moves');
    expect(dest.status, dest.text).toBe(201);
    const backup = await agent.post(`/environments/${two.id}/backups`, { destination_id: dest.body.id });
    expect(backup.status, backup.text).toBe(202);
    const backedUp = await waitForTask(t, agent, backup.body.id, { timeoutMs: 60_000 });
    expect(backedUp.status, `${backedUp.error}\n${await taskLog(t, agent, backedUp.id)}`).toBe('succeeded');
    writeFileSync(path.join(volume, 'after.txt'), 'written after the snapshot');

    // the host's agent dies in the middle of a host watch round it took (every host polls the shared queue): the
    // round is run again on this host within its heartbeat timeout; it held every later round for minutes before
    // (its instances run on: they are stale once their environment runs elsewhere)
    writeFileSync(holdSweep, '');
    await until('a host watch round held on the other host', () => existsSync(`${holdSweep}.held`), {
      timeoutMs: 60_000,
    });
    await killAndWait(children.at(-1)!, 'SIGKILL');
    lostAt = Date.now();
    rmSync(holdSweep);
    // what a timeout shows: the lost host's row and one's newest move, as last read
    let seen = '';
    const move = await untilWatched(
      'the move of one',
      async () => {
        const m = await newestMove(one.id);
        const h = await t.deps.knex('hosts').where({ name: other }).first();
        seen = `host ${other}: ${JSON.stringify(h)}; newest move: ${JSON.stringify(m ?? null)}`;
        return m?.status === 'succeeded' && JSON.parse(JSON.stringify(m.params)).reason === 'lost' && m;
      },
      { timeoutMs: 60_000, detail: () => seen },
    );
    expect((await placement(one.id)).host).toBe(here);
    expect(await fetchEnvironment(one.port)).toEqual({ status: 200, text: 'v1' });
    const took = (Date.now() - lostAt) / 1000;
    expect(took).toBeLessThan(60);
    console.log(`host lost -> stateless environment answering from the other host: ${took.toFixed(1)} s`);
    expect(move.account_via).toBe('system');

    expect(await statusOf(other)).toBe('lost');
    expect((await t.deps.knex('hosts').where({ name: other }).first()).status).toBe('drained');
    expect((await placement(two.id)).status).toBe('host_lost');
    expect((await placement(two.id)).host).toBe(other);
    const down = await until('503 for two', async () => {
      const r = await fetchEnvironment(two.port);
      return r.status === 503 && r;
    });
    expect(down.text).toContain('the machine this environment runs on is down');
    // the team sees the server's status
    const servers = await agent.get('/servers');
    expect(servers.status, servers.text).toBe(200);
    const web = (servers.body.data as Array<{ environment_id: string; role: string; status: string }>).find(
      (x) => x.environment_id === two.id && x.role === 'web',
    );
    expect(web?.status).toBe('host_lost');
  }, 180_000);

  it('evacuate lists each host_lost environment with its snapshot age; --confirm restores it elsewhere and tells its admins', async () => {
    const listed = await hostsCli('evacuate', other);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`two \\(${two.id}\\): snapshot [0-9a-f-]+, \\d+ s old`));
    expect(listed.stdout).not.toContain('one (');

    const confirmed = await hostsCli('evacuate', other, '--confirm');
    expect(confirmed.code, confirmed.stderr).toBe(0);
    const taskId = /two: restoring onto another host \(task ([0-9a-f-]+)\)/.exec(confirmed.stdout)?.[1];
    expect(taskId, confirmed.stdout).toBeDefined();
    const task = await waitForTask(t, agent, taskId!, { timeoutMs: 90_000 });
    const log = await taskLog(t, agent, taskId!);
    expect(task.status, `${task.error}\n${log}`).toBe('succeeded');
    expect(await placement(two.id)).toMatchObject({ host: here, status: 'running' });
    expect(await fetchEnvironment(two.port)).toEqual({ status: 200, text: 'v1' });
    // its volume is the snapshot's: the write after it is gone
    const volume = await environmentVolume(t.deps.knex, t.config.storageRoots, two.id);
    expect(readFileSync(path.join(volume, 'upload.txt'), 'utf8')).toBe('kept here');
    expect(existsSync(path.join(volume, 'after.txt'))).toBe(false);
    // the team's owner hears what was lost
    const mail = await t.smtp!.waitFor(
      (m) => m.to.includes(owner.email) && m.subject.includes('restored from its snapshot'),
    );
    expect(mail.text).toContain('is lost');
    expect(mail.text).not.toContain(other);
    expect(log).not.toContain(other);
  }, 180_000);

  it('the lost host rejoining stops its stale instances and comes back drained; with no host open, a move fails no_capacity', async () => {
    expect(instancesOn(other, one.id)).toEqual(staleOne); // still running
    expect(instancesOn(other, two.id)).toEqual(staleTwo);
    startOtherHost();
    await untilWatched(
      'the stale instances to stop',
      () => instancesOn(other, one.id).length === 0 && instancesOn(other, two.id).length === 0,
      { timeoutMs: 60_000 },
    );
    await until('the loss cleared', async () => !(await t.deps.knex('hosts').where({ name: other }).first()).lost_at, {
      timeoutMs: 30_000,
    });
    expect(await statusOf(other)).toBe('drained');
    expect(await fetchEnvironment(one.port)).toEqual({ status: 200, text: 'v1' });
    expect(await fetchEnvironment(two.port)).toEqual({ status: 200, text: 'v1' });

    // no other host open to placement (the other one is drained): the move fails no_capacity, naming no host
    const refused = await startMove(t.deps, envRef(one), 'drain');
    const failed = await waitForTask(t, agent, (refused as { taskId: string }).taskId, { timeoutMs: 30_000 });
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/^no_capacity: No host has room for this environment: /);
    expect(failed.error).not.toContain(other);
    expect(failed.error).not.toContain(here);
    expect(await placement(one.id)).toMatchObject({ host: here, status: 'running' });
    expect(await fetchEnvironment(one.port)).toEqual({ status: 200, text: 'v1' });

    const undrained = await hostsCli('undrain', other);
    expect(undrained.code).toBe(0);
    expect(await statusOf(other)).toBe('ready');
  }, 120_000);
  it('a drain copies a volume that holds data to the other host through the store (whatever the last sample said), deletes the old copy, and ends drained', async () => {
    const three = await deployedEnvironment('three', volumeProject.id);
    expect((await placement(three.id)).host).toBe(other);
    expect(await fetchEnvironment(three.port, '/put?name=upload.txt&body=carried%20over')).toEqual({
      status: 200,
      text: 'stored',
    });
    const oldVolume = await environmentVolume(t.deps.knex, [otherRoot], three.id);
    expect(readFileSync(path.join(oldVolume, 'upload.txt'), 'utf8')).toBe('carried over');
    // the last usage sample says the volume is empty, as one taken just before the write does (they come every
    // RESOURCE_SAMPLE_SECONDS, 60 by default): the host itself is asked, and the file is copied all the same
    await sampledEmpty(three.id);

    const drained = await hostsCli('drain', other);
    expect(drained.code, drained.stderr).toBe(0);
    expect(drained.stdout).toMatch(/three: moving \(task /);
    await until('the drained host', async () => (await statusOf(other)) === 'drained', { timeoutMs: 120_000 });
    const move = await newestMove(three.id);
    const log = await taskLog(t, agent, move.id);
    expect(move.status, `${move.error}\n${log}`).toBe('succeeded');
    expect(await placement(three.id)).toMatchObject({ host: here, status: 'running' });
    // the app reads the same file on the new host, from its volume under this host's STORAGE_ROOTS
    const newVolume = await environmentVolume(t.deps.knex, t.config.storageRoots, three.id);
    expect((await fetchEnvironment(three.port, '/where')).text).toBe(newVolume);
    expect(await fetchEnvironment(three.port, '/get?name=upload.txt')).toEqual({ status: 200, text: 'carried over' });
    // the copy went through the store and is deleted from it; the old host's copy is deleted
    const copied =
      /Its volume was copied \((\d+) bytes through the store, deleted from it since\); it was stopped for (\d+) s/.exec(
        log,
      );
    expect(copied, log).not.toBeNull();
    expect(Number(copied![1])).toBeGreaterThan(0);
    expect(existsSync(path.join(t.config.releaseStore.location, 'moves', three.id))).toBe(false);
    await until('the old copy deleted', () => !existsSync(volumePath(otherRoot, three.id)), { timeoutMs: 30_000 });
    expect(newVolume).not.toBe(oldVolume);
    expect(log).not.toContain(other);
    expect(log).not.toContain(here);

    const undrained = await hostsCli('undrain', other);
    expect(undrained.code).toBe(0);
  }, 240_000);

  it("a sync from an environment on another host copies its files through the store: the target's files become the source's", async () => {
    // three is on this host since the drain, with its file; five lands on the other host (more room)
    const three = await t.deps.knex('environments').where({ project_id: volumeProject.id, name: 'three' }).first();
    expect((await placement(three.id)).host).toBe(here);
    const five = await deployedEnvironment('five', volumeProject.id);
    expect((await placement(five.id)).host).toBe(other);
    expect((await fetchEnvironment(five.port, '/put?name=own.txt&body=mine')).text).toBe('stored');
    // the API's machine has no copy of five's volume: it is offered as a source, and its size shown, from what
    // its own host's sampler recorded
    await volumeSampled(five.id);
    const sources = await agent.get(`/environments/${three.id}/sync`);
    expect(sources.body.sources).toContainEqual({ environment_id: five.id, name: 'five' });
    const disk = await agent.get(`/environments/${five.id}/storage/files/disk`);
    expect(disk.status, disk.text).toBe(200);
    expect(disk.body.used_bytes).toBeGreaterThan(0);

    // a copy an earlier sync into five left in the store (the store failed when that sync deleted it)
    const copies = path.join(t.config.releaseStore.location, 'syncs', five.id);
    mkdirSync(copies, { recursive: true });
    writeFileSync(path.join(copies, 'earlier-task.vcb'), 'left behind');

    const res = await agent.post(`/environments/${five.id}/sync`, { from_environment_id: three.id, confirm: true });
    expect(res.status, res.text).toBe(202);
    const task = await waitForTask(t, agent, res.body.id, { timeoutMs: 90_000 });
    const log = await taskLog(t, agent, task.id);
    expect(task.status, `${task.error}\n${log}`).toBe('succeeded');
    expect(task.result).toMatchObject({ copied: ['files'] });
    // the app on the other host reads the source's file; its own is gone, as a sync replaces the files
    expect(await fetchEnvironment(five.port, '/get?name=upload.txt')).toEqual({ status: 200, text: 'carried over' });
    expect((await fetchEnvironment(five.port, '/get?name=own.txt')).status).toBe(500);
    expect((await fetchEnvironment(five.port, '/where')).text).toBe(volumePath(otherRoot, five.id));
    expect(readFileSync(path.join(volumePath(otherRoot, five.id), 'upload.txt'), 'utf8')).toBe('carried over');
    // the source is untouched, and the copy is gone from the store, with the one left before
    expect(await fetchEnvironment(three.port, '/get?name=upload.txt')).toEqual({ status: 200, text: 'carried over' });
    expect(log).toMatch(/The source's files were copied out on its machine, through the release store \(\d+\.\d MiB\)/);
    expect(existsSync(copies)).toBe(false);
    expect(log).not.toContain(other);
    expect(log).not.toContain(here);
  }, 180_000);

  it("discarding the old copy a storage move left deletes it on the environment's host", async () => {
    const five = await t.deps.knex('environments').where({ project_id: volumeProject.id, name: 'five' }).first();
    expect((await placement(five.id)).host).toBe(other);
    const moved = await agent.post(`/environments/${five.id}/storage/files/move`, { location: otherRoot2 });
    expect(moved.status, moved.text).toBe(202);
    const move = await waitForTask(t, agent, moved.body.id, { timeoutMs: 90_000 });
    expect(move.status, `${move.error}\n${await taskLog(t, agent, move.id)}`).toBe('succeeded');
    expect(await fetchEnvironment(five.port, '/get?name=upload.txt')).toEqual({ status: 200, text: 'carried over' });
    expect(existsSync(volumePath(otherRoot, five.id))).toBe(true);

    const res = await agent.post(`/environments/${five.id}/storage/discard`, { confirm: true });
    expect(res.status, res.text).toBe(202);
    const task = await waitForTask(t, agent, res.body.id, { timeoutMs: 60_000 });
    expect(task.status, `${task.error}\n${await taskLog(t, agent, task.id)}`).toBe('succeeded');
    expect(task.result.discarded).toEqual([`files@${otherRoot}`]);
    expect(await taskLog(t, agent, task.id)).toContain(`==> Discarded: files@${otherRoot}`);
    expect(existsSync(volumePath(otherRoot, five.id))).toBe(false);
    expect(await fetchEnvironment(five.port, '/get?name=upload.txt')).toEqual({ status: 200, text: 'carried over' });
    // both hosts are this machine here: what proves the machine is the queue the deletion was sent to
    const { workflow_id } = await t.deps.knex('tasks').where({ id: task.id }).first('workflow_id');
    const history = await t.deps.temporal.workflow.getHandle(workflow_id).fetchHistory();
    const queues = (history.events ?? []).flatMap((e) => {
      const a = e.activityTaskScheduledEventAttributes;
      return a?.activityType?.name === 'discardOldStorage' ? [a.taskQueue?.name] : [];
    });
    expect(queues[0]).toBe(hostTaskQueue(t.config.taskQueue, other));
  }, 180_000);

  it("the night's backup asks the other host whether a volume holds files when its last sample says it is empty", async () => {
    const five = await t.deps.knex('environments').where({ project_id: volumeProject.id, name: 'five' }).first();
    expect((await placement(five.id)).host).toBe(other);
    // five has no database; its last usage sample says its volume is empty, as one taken just before the volume's
    // first files does (samples come every RESOURCE_SAMPLE_SECONDS, 60 by default): its host is asked
    await sampledEmpty(five.id);
    const dest = await s3Destination('nightly');
    expect(dest.status, dest.text).toBe(201);
    const window = `/projects/${volumeProject.id}/backup-window`;
    const set = await agent.post(window, { hour_utc: 4, retention_days: 2, destination_id: dest.body.id });
    expect(set.status, set.text).toBe(200);
    try {
      await t.deps.temporal.schedule.getHandle(`backups-${volumeProject.id}`).trigger();
      const snapshot = await until(
        "five's scheduled snapshot, taken",
        async () => {
          const list = (await agent.get(`/environments/${five.id}/backups`)).body.data as Array<
            Record<string, unknown>
          >;
          const taken = list.find((b) => b.trigger === 'scheduled');
          return taken && taken.status !== 'pending' && taken.status !== 'running' && taken;
        },
        { timeoutMs: 90_000 },
      );
      expect(snapshot.status, String(snapshot.error)).toBe('available');
      expect(snapshot.contents).toEqual(['files']);
      // every host's worker polls the shared queue, and the one on five's machine reads its disk: what proves that
      // five's host was asked, whichever worker ran the run, is the queue the question went to
      const runs = t.deps.temporal.workflow.list({
        query: `WorkflowType='scheduledBackups' AND WorkflowId STARTS_WITH 'scheduled-backups-${volumeProject.id}'`,
      });
      const queues: Array<string | null | undefined> = [];
      for await (const run of runs) {
        const history = await t.deps.temporal.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
        for (const e of history.events ?? []) {
          const a = e.activityTaskScheduledEventAttributes;
          if (a?.activityType?.name === 'volumeHoldsFiles') queues.push(a.taskQueue?.name);
        }
      }
      expect(queues).toContain(hostTaskQueue(t.config.taskQueue, other));
    } finally {
      await agent.delete(window);
    }
  }, 150_000);

  it('a move that fails after the volume copy (the app does not start on the new host) serves from the old host again, with its data, and leaves nothing on the new one', async () => {
    // the volume app, which exits at start anywhere but under the other host's STORAGE_ROOTS
    const repo = createSharedAppRepo();
    repo.commit('v1');
    const onlyThere = `if (!String(process.env.VC_VOLUME_PATH).startsWith(${JSON.stringify(otherRoot + path.sep)})) process.exit(3);\n`;
    commitServer(repo, onlyThere + heldVolumeApp(path.join(repo.gate, 'never'), 'v1'), 'starts on one host only');
    const stuckProject = await createProject(t, team, { name: 'one-host-only', repository_url: repo.dir });
    const four = await deployedEnvironment('four', stuckProject.id);
    expect((await placement(four.id)).host).toBe(other);
    expect(await fetchEnvironment(four.port, '/put?name=upload.txt&body=kept')).toEqual({
      status: 200,
      text: 'stored',
    });
    await volumeSampled(four.id);

    const started = await startMove(
      t.deps,
      { environment_id: four.id, team_id: team.id, project_id: stuckProject.id, name: four.name },
      'drain',
    );
    const taskId = (started as { taskId: string }).taskId;
    const task = await waitForTask(t, agent, taskId, { timeoutMs: 60_000 });
    const log = await taskLog(t, agent, taskId);
    expect(task.status, log).toBe('failed');
    // why, where it is now, what to do; never a host's name
    expect(task.error).toMatch(
      /^this environment did not start on another machine: .*exited with code 3 before it was ready\. It serves from its previous machine again, with its volume as it was; nothing else changed\. Fix what stops it from starting on another machine; the move runs again when its machine is drained again\.$/,
    );
    expect(log).toContain('The volume was put back on another machine');
    expect(log).toContain('The copy of the volume on the other machine was deleted');
    for (const text of [task.error, log]) {
      expect(text).not.toContain(other);
      expect(text).not.toContain(here);
    }
    // no half state: placed on its host, running, served by the edge from there with its data
    expect(await placement(four.id)).toMatchObject({ host: other, status: 'running' });
    // its volume's record is its host's root (none recorded, or put back), never the new host's
    expect(await environmentVolume(t.deps.knex, [otherRoot], four.id)).toBe(volumePath(otherRoot, four.id));
    expect(await fetchEnvironment(four.port, '/get?name=upload.txt')).toEqual({ status: 200, text: 'kept' });
    expect((await fetchEnvironment(four.port, '/where')).text).toBe(volumePath(otherRoot, four.id));
    expect(instancesOn(other, four.id).length).toBe(1);
    expect(instancesOn(here, four.id)).toEqual([]);
    // nothing of its data left on the new host, nor in the store
    expect(existsSync(volumePath(t.config.storageRoots[0], four.id))).toBe(false);
    const copies = path.join(t.config.releaseStore.location, 'moves', four.id);
    expect(existsSync(copies) ? readdirSync(copies) : []).toEqual([]);
  }, 120_000);
});

/** A usage sample of the environment, newer than any its host takes, that says its volume is empty. */
const sampledEmpty = (environmentId: string) =>
  t.deps.knex('resource_samples').insert({
    environment_id: environmentId,
    at: new Date(Date.now() + 3600_000),
    cpu: 0,
    memory_bytes: 0,
    disk_bytes: 0,
    volume_bytes: 0,
  });

/** A backup destination of the team in the file's S3 store (s3rver). */
const s3Destination = (name: string) =>
  agent.post(`/teams/${team.id}/backup-destinations`, {
    kind: 's3',
    name,
    endpoint: s3.endpoint,
    region: 'us-east-1',
    bucket: 'backups',
    access_key_id: s3.accessKeyId,
    secret_access_key: s3.secretAccessKey,
  });

/** Until the other host's sampler has recorded the environment's volume as holding data (a move then copies it). */
async function volumeSampled(environmentId: string) {
  await until(
    'a sample of the volume',
    async () =>
      !!(await t.deps
        .knex('resource_samples')
        .where({ environment_id: environmentId })
        .where('volume_bytes', '>', 0)
        .first()),
    { timeoutMs: 30_000 },
  );
}
