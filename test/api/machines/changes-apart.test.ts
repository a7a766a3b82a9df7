import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { makeStorageRoots } from '../../helpers/storage-roots';
import {
  createDeployWorld,
  fetchEnvironment,
  getTask,
  heldVolumeApp,
  taskLog,
  waitForTask,
} from '../../helpers/deploy-fixtures';
import { sessionAgent } from '../../helpers/fixtures';
import type { Agent } from '../../helpers/http';
import { createEnvironmentMachines } from '../../../api/machines/service';
import { until } from '../../helpers/until';

/**
 * Issue 16, item 8 (CONTRACT "Tasks of every kind"): apply_variables, reboot and maintenance start or stop web
 * processes; they wait `pending` while an exclusive change (here a storage move, a redeploy) runs on the
 * environment and never run beside one, and an exclusive change waits likewise while one of them runs.
 * The attack it answers: a variables apply in the middle of a storage move restarted the web process on the
 * old volume, and what it wrote then was lost with the old copy at discard.
 *
 * The tasks are held at a gate: the app's /healthz answers 503 while the file `hold` exists (in a directory
 * every sandbox sees read-only), so whichever task (re)starts the web process waits there, running.
 */
const t = useTestContext({ worker: true });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let owner: Agent;
let roots: [string, string];
let hold: string;
const env = () => `/environments/${w.environment.id}`;
const volumeAt = (root: string) => join(root, 'volumes', w.environment.id);

const get = (p: string) => fetchEnvironment(w.environment.port, p);

async function start(p: string, body: unknown = {}): Promise<string> {
  const res = await owner.post(p, body);
  expect(res.status, res.text).toBe(202);
  return res.body.id;
}

async function succeeded(id: string) {
  const task = await waitForTask(t, owner, id, { timeoutMs: 150_000 });
  expect(task.status, `${task.error ?? ''}\n${await taskLog(t, owner, id)}`).toBe('succeeded');
  return task as typeof task & { finished_at: string };
}

/** Until the task's log says `text` (the task has come that far). */
async function logSays(id: string, text: string) {
  await until(
    `task ${id} to log "${text}"`,
    () => taskLog(t, owner, id),
    (log) => log.includes(text),
    120_000,
  );
}

/** The task stays pending for a while (its workflow asks again several times), and says what it waits for. */
async function staysPending(id: string, waitsFor: string) {
  await logSays(id, `Waiting for ${waitsFor}`);
  await new Promise((r) => setTimeout(r, 4000));
  const task = await getTask(t, owner, id);
  expect(task.status, await taskLog(t, owner, id)).toBe('pending');
  expect(task.started_at).toBeNull();
}

beforeAll(async () => {
  roots = makeStorageRoots(t);
  w = await createDeployWorld(t);
  // its web server (the API's environment creation makes it; the fixture inserts the row alone)
  await t.deps.knex.transaction((trx) => createEnvironmentMachines(trx, t.deps, w.environment));
  hold = join(dirname(w.repo.gate), 'hold');
  writeFileSync(join(w.repo.dir, 'server.js'), heldVolumeApp(hold));
  writeFileSync(join(w.repo.dir, 'service.yaml'), 'build: []\ndeploy: []\nweb: node server.js\nhealth: /healthz\n');
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qam', 'held app'], {
    cwd: w.repo.dir,
  });
  owner = await sessionAgent(t, w.owner);
  await succeeded(await start(`${env()}/deploy`));
  expect(await get('/put?name=before.txt&body=written%20before')).toEqual({ status: 200, text: 'stored' });
}, 180_000);

describe('POST /environments/{id}/variables/apply during a storage move', () => {
  it('waits pending until the move has ended, then restarts the app on the new volume; nothing written is lost', async () => {
    writeFileSync(hold, '');
    let held = true;
    try {
      const move = await start(`${env()}/storage/files/move`, { location: roots[1] });
      // copied and verified: the move now waits for the web process it started on the new volume
      await logSays(move, 'Verified:');
      const apply = await start(`${env()}/variables/apply`);
      await staysPending(apply, 'storage_move');
      rmSync(hold);
      held = false;
      const moved = await succeeded(move);
      const applied = await succeeded(apply);
      expect(new Date(applied.started_at!).getTime()).toBeGreaterThanOrEqual(new Date(moved.finished_at).getTime());
    } finally {
      if (held) rmSync(hold, { force: true });
    }
    expect(await get('/where')).toEqual({ status: 200, text: volumeAt(roots[1]) });
    expect(await get('/put?name=after.txt&body=written%20after')).toEqual({ status: 200, text: 'stored' });
    await succeeded(await start(`${env()}/storage/discard`, { confirm: true }));
    expect(existsSync(volumeAt(roots[0]))).toBe(false);
    expect(await get('/get?name=after.txt')).toEqual({ status: 200, text: 'written after' });
    expect(await get('/get?name=before.txt')).toEqual({ status: 200, text: 'written before' });
    expect(readFileSync(join(volumeAt(roots[1]), 'after.txt'), 'utf8')).toBe('written after');
  }, 300_000);
});

describe('an exclusive change while variables are being applied', () => {
  it('is accepted, waits pending until the apply has ended, then runs', async () => {
    writeFileSync(hold, '');
    let held = true;
    try {
      const apply = await start(`${env()}/variables/apply`);
      await waitForTask(t, owner, apply, { until: (task) => task.status === 'running', timeoutMs: 60_000 });
      const move = await start(`${env()}/storage/files/move`, { location: roots[0] });
      await staysPending(move, 'apply_variables');
      rmSync(hold);
      held = false;
      const applied = await succeeded(apply);
      const moved = await succeeded(move);
      expect(new Date(moved.started_at!).getTime()).toBeGreaterThanOrEqual(new Date(applied.finished_at).getTime());
    } finally {
      if (held) rmSync(hold, { force: true });
    }
    expect(await get('/where')).toEqual({ status: 200, text: volumeAt(roots[0]) });
    expect(await get('/get?name=after.txt')).toEqual({ status: 200, text: 'written after' });
  }, 300_000);
});

describe('reboot and maintenance during a deploy', () => {
  it('wait pending until the deploy has ended, then run', async () => {
    // the deploy's build waits for the gate file (test/helpers/deploy-fixtures.ts), running
    w.repo.commit('v2', { gated: true });
    const deploy = await start(`${env()}/deploy`);
    try {
      await waitForTask(t, owner, deploy, { until: (task) => task.status === 'running', timeoutMs: 60_000 });
      const server = (await owner.get(`/servers?team=${w.team.id}`)).body.data.find(
        (s: { environment_id: string; role: string }) => s.environment_id === w.environment.id && s.role === 'web',
      );
      const reboot = await start(`/servers/${server.id}/reboot`);
      const maintenance = await start(`${env()}/maintenance`, { maintenance: true, note: 'later' });
      // both held at once: the same seconds prove each of them waiting
      await Promise.all([staysPending(reboot, 'deploy'), staysPending(maintenance, 'deploy')]);
      writeFileSync(w.repo.gate, '');
      const deployed = await succeeded(deploy);
      for (const id of [reboot, maintenance]) {
        const task = await succeeded(id);
        expect(new Date(task.started_at!).getTime()).toBeGreaterThanOrEqual(new Date(deployed.finished_at).getTime());
      }
    } finally {
      writeFileSync(w.repo.gate, '');
    }
    // maintenance went on after the deploy went live (not under it), and the new release serves behind it
    expect((await owner.get(env())).body.maintenance).toMatchObject({ on: true, note: 'later' });
    const down = await get('/');
    expect(down.status).toBe(503);
    expect(down.text).toContain('later');
    await succeeded(await start(`${env()}/maintenance`, { maintenance: false }));
    expect(await get('/')).toEqual({ status: 200, text: 'v2' });
  }, 300_000);
});
