/**
 * Volumes copied between hosts (CONTRACT "Hosts", "Storage"), with two hosts (test/helpers/two-hosts.ts): the file's
 * own and a worker process for another, with STORAGE_ROOTS of its own, sharing the file's DATA_DIR (and so its
 * release store directory).
 *
 * Proved: a drain of a host holding an environment whose volume holds a file copies the volume through the release
 * store (none of it left there), the app reads the file on the new host, the old copy is deleted, and the host ends
 * `drained`; a sync into an environment on the other host from one on this host copies the source's files through
 * the store (the target's own files replaced, none left in the store), and the API offers the other host's
 * environment as a sync source and shows its volume's size, from its samples; the old copy a storage move left on
 * the other host is discarded there (its queue, as both hosts share this disk); the night's backup asks the volume's
 * own host; a move that fails after the copy (the app does not start on the new host) leaves the environment serving
 * from its host with its data, the task `failed` saying so and what to do, and nothing of it on the other host or in
 * the store. Moves, drains and lost hosts: host-moves.test.ts.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import {
  commitServer,
  createSharedAppRepo,
  fetchEnvironment,
  heldVolumeApp,
  taskLog,
  waitForTask,
} from '../helpers/deploy-fixtures';
import { until } from '../helpers/until';
import type { Agent } from '../helpers/http';
import { createProject } from '../helpers/fixtures';
import { startMove } from '../../core/host-moves';
import { environmentVolume, volumePath } from '../../db/queries/storage';
import { instancesOn } from '../helpers/host-moves';
import { twoHostsContext, useTwoHosts } from '../helpers/two-hosts';
import { hostTaskQueue } from '../../system/task-queues';

const t = useTestContext(twoHostsContext);
const {
  h,
  hostsCli,
  statusOf,
  placement,
  deployedEnvironment,
  newestMove,
  sampledEmpty,
  s3Destination,
  volumeSampled,
} = useTwoHosts(t, 1);
let here: string;
let other: string;
let otherRoot: string;
let otherRoot2: string;
let agent: Agent;
let team: (typeof h)['team'];
let volumeProject: (typeof h)['volumeProject'];
beforeAll(() => {
  ({ here, other, otherRoot, otherRoot2, agent, team, volumeProject } = h);
});

describe('volumes copied between hosts', () => {
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
