/**
 * Moving environments between hosts (CONTRACT "Hosts", issue 26 items 7 and 8), with two hosts (test/helpers/two-hosts.ts):
 * the file's own and a worker process for another, sharing the file's DATA_DIR; the edge reaches both hosts'
 * sandboxes on this machine.
 *
 * Proved: a move of a stateless environment answers every request meanwhile and stops the old instance; a drain
 * (`npm run hosts -- drain`) moves every environment and ends `drained`, `undrain` opens it; a lost host's
 * stateless environment answers from the other host within 60 s of the loss (HOST_LOST_SECONDS 3), its stateful
 * one is `host_lost` and the edge answers it 503; `evacuate` lists it and restores it elsewhere from its snapshot;
 * the host rejoining stops its stale instances and comes back `drained`; with no host open, a move fails
 * `no_capacity`. Volumes copied between hosts: host-volume-moves.test.ts.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { fetchEnvironment, taskLog, waitForTask } from '../helpers/deploy-fixtures';
import { killAndWait } from '../helpers/processes';
import { until } from '../helpers/until';
import type { Agent } from '../helpers/http';
import { startMove } from '../../core/host-moves';
import { environmentVolume } from '../../db/queries/storage';
import { instancesOn } from '../helpers/host-moves';
import { type Env, twoHostsContext, useTwoHosts } from '../helpers/two-hosts';

const t = useTestContext(twoHostsContext);
const {
  h,
  startOtherHost,
  hostsCli,
  statusOf,
  placement,
  deployedEnvironment,
  envRef,
  newestMove,
  untilWatched,
  s3Destination,
} = useTwoHosts(t, 0);
let here: string;
let other: string;
let otherRoot: string;
let holdSweep: string;
let children: ChildProcess[];
let agent: Agent;
let owner: (typeof h)['owner'];
beforeAll(() => {
  ({ here, other, otherRoot, holdSweep, children, agent, owner } = h);
});

describe('moving environments between hosts', () => {
  let one: Env;
  let two: Env;

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
});
