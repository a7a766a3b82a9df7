/**
 * Placement (CONTRACT "Hosts", core/placement.ts) through the API: host rows whose capacity, status and
 * heartbeat the test sets (the file's own host is drained, so only these are open to placement).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { repositoriesDir, useTestContext } from '../../helpers/context';
import { createProject, createTeam, createUser, sessionAgent, insertHost } from '../../helpers/fixtures';
import { listHosts } from '../../../db/queries/hosts';
import type { Agent, Res } from '../../helpers/http';
import { commitAll } from '../../helpers/deploy-fixtures';

// a worker runs the tasks' workflows (their host's work waits: no agent polls the test's hosts) and the host watch
const t = useTestContext({ worker: true });
const scratch = mkdtempSync(join(repositoriesDir(), 'vc-placement-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const repository = join(scratch, 'repo');
execFileSync('git', ['init', '-q', '-b', 'main', repository]);
commitAll(repository, 'a');

/** A host row as an agent would register it; `heartbeat` is how many seconds ago it last beat. */
async function host(name: string, memoryMb: number, o: { status?: string; heartbeat?: number } = {}) {
  await insertHost(t, name, { memoryMb, status: o.status ?? 'ready', heartbeatSecondsAgo: o.heartbeat });
}

/** The test's hosts heartbeat now (all but the lost one), as their agents would. */
const beat = () =>
  t.deps
    .knex('hosts')
    .whereLike('name', 'p-%')
    .whereNot('name', 'p-lost')
    .update({ heartbeat_at: t.deps.knex.fn.now() });

let agent: Agent;
let projectId: string;
let n = 0;
const create = () => agent.post(`/projects/${projectId}/environments`, { name: `env-${++n}`, git_ref: 'main' });
/** A host's memory as `npm run hosts -- list` shows it: what its servers use, and what open tasks hold beyond. */
const hostMemory = async (name: string) => {
  const h = (await listHosts(t.deps.knex, t.config.hostLostSeconds)).find((x) => x.name === name)!;
  return { used: h.used.memory_mb, held: h.held.memory_mb };
};
const hostOf = async (environmentId: string) =>
  (await t.deps.knex('servers').where({ environment_id: environmentId, role: 'web' }).first('host')).host as string;

beforeAll(async () => {
  // the file's own host takes nothing: only the rows below are open to placement
  await t.deps.knex('hosts').where({ name: t.config.hostName }).update({ status: 'drained' });
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  projectId = (await createProject(t, team, { repository_url: repository })).id;
  agent = await sessionAgent(t, owner);
});
beforeEach(beat);

describe('placement', () => {
  const placed: Array<{ id: string; host: string }> = [];
  /** The task granted the last room on p-d, and the refused request, to ask again. */
  let granted: { id: string };
  let askAgain: () => Promise<Res>;

  it('puts each new web server on the ready host with the most free memory, never on a lost or draining one', async () => {
    await host('p-a', 2048);
    await host('p-b', 1280);
    await host('p-lost', 100_000, { heartbeat: 3600 });
    await host('p-draining', 100_000, { status: 'draining' });
    for (let i = 0; i < 6; i++) {
      const res = await create();
      expect(res.status).toBe(201);
      placed.push({ id: res.body.id, host: await hostOf(res.body.id) });
    }
    // small = 512 MB: a 2048 -> 1536 -> 1024, then b 1280 -> 768, a -> 512, b -> 256, a -> 0
    expect(placed.map((p) => p.host)).toEqual(['p-a', 'p-a', 'p-b', 'p-a', 'p-b', 'p-a']);
    const hosts = Object.fromEntries((await listHosts(t.deps.knex, t.config.hostLostSeconds)).map((h) => [h.name, h]));
    expect(hosts['p-a']).toMatchObject({ status: 'ready', used: { memory_mb: 2048 }, environments: 4 });
    expect(hosts['p-b']).toMatchObject({ status: 'ready', used: { memory_mb: 1024 }, environments: 2 });
    expect(hosts['p-lost']).toMatchObject({ status: 'lost', environments: 0 });
    expect(hosts['p-draining']).toMatchObject({ status: 'draining', environments: 0 });
  });

  it('refuses with 409 no_capacity naming the largest plan that fits now, and nothing of the hosts', async () => {
    const before = await t.deps.knex('environments').count<{ count: string }[]>({ count: '*' });
    const res = await create();
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('no_capacity');
    // p-b has 256 MB left: nano fits, small does not
    expect(res.body.error.message).toContain('the largest plan that fits now is nano');
    expect(res.body.error.message).not.toMatch(/p-a|p-b|p-lost|256|MB/);
    // nothing was created
    expect(await t.deps.knex('environments').count<{ count: string }[]>({ count: '*' })).toEqual(before);
  });

  it('says that no plan fits when no host has room for the smallest', async () => {
    await t.deps
      .knex('hosts')
      .where({ name: 'p-b' })
      .update({ memory_mb: 1024 + 100 });
    const res = await create();
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('no_capacity');
    expect(res.body.error.message).toMatch(/no plan fits now/);
  });

  it('refuses a resize or a scale that no longer fits on the server host; a smaller plan is taken', async () => {
    const onA = placed.find((p) => p.host === 'p-a')!; // p-a is full
    const server = await t.deps.knex('servers').where({ environment_id: onA.id, role: 'web' }).first();
    const resize = await agent.post(`/servers/${server.id}/resize`, { plan: 'medium' });
    expect(resize.status).toBe(409);
    expect(resize.body.error.code).toBe('no_capacity');
    expect(resize.body.error.message).not.toMatch(/p-a/);
    const scale = await agent.post(`/environments/${onA.id}/scale`, { instances: 2 });
    expect(scale.status).toBe(409);
    expect(scale.body.error.code).toBe('no_capacity');
    // with room on its host, the same resize is started
    await t.deps
      .knex('hosts')
      .where({ name: 'p-a' })
      .update({ memory_mb: 2048 + 512 });
    const roomy = await agent.post(`/servers/${server.id}/resize`, { plan: 'medium' });
    expect(roomy.status).toBe(202);
    // a smaller plan needs no room
    const other = placed.filter((p) => p.host === 'p-a')[1];
    const small = await t.deps.knex('servers').where({ environment_id: other.id, role: 'web' }).first();
    expect((await agent.post(`/servers/${small.id}/resize`, { plan: 'nano' })).status).toBe(202);
  });

  it('never overbooks a host when creations run at once', async () => {
    await t.deps.knex('hosts').whereLike('name', 'p-%').update({ status: 'drained' });
    await host('p-c', 1024);
    const answers = await Promise.all(Array.from({ length: 5 }, () => create()));
    expect(answers.map((r) => r.status).sort()).toEqual([201, 201, 409, 409, 409]);
    const onC = await t.deps.knex('servers').where({ host: 'p-c' }).count<{ count: string }[]>({ count: '*' });
    expect(Number(onC[0].count)).toBe(2);
  });

  it('grants the last room to one of a resize and a scale asked at once, and holds it while its task is open', async () => {
    await t.deps.knex('hosts').whereLike('name', 'p-%').update({ status: 'drained' });
    await host('p-d', 1536);
    const envs = [await create(), await create()].map((r) => r.body.id as string);
    expect([await hostOf(envs[0]), await hostOf(envs[1])]).toEqual(['p-d', 'p-d']); // 512 MB left
    const server = await t.deps.knex('servers').where({ environment_id: envs[0], role: 'web' }).first();
    // each grows by 512 MB: only one fits
    const [resize, scale] = await Promise.all([
      agent.post(`/servers/${server.id}/resize`, { plan: 'medium' }),
      agent.post(`/environments/${envs[1]}/scale`, { instances: 2 }),
    ]);
    expect([resize.status, scale.status].sort()).toEqual([202, 409]);
    const [grant, refused] = resize.status === 202 ? [resize, scale] : [scale, resize];
    expect(refused.body.error.code).toBe('no_capacity');
    granted = grant.body;
    askAgain = () =>
      resize.status === 202
        ? agent.post(`/environments/${envs[1]}/scale`, { instances: 2 })
        : agent.post(`/servers/${server.id}/resize`, { plan: 'medium' });
    // the granted task has not resized anything yet (its host p-d has no agent): its room stays taken
    expect((await agent.get(`/tasks/${granted.id}`)).body.status).toMatch(/^(pending|running)$/);
    const again = await askAgain();
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('no_capacity');
    // and so does a new environment's placement
    expect((await create()).status).toBe(409);
    // the operator's list shows the room held beside what the servers use now
    expect(await hostMemory('p-d')).toEqual({ used: 1024, held: 512 });
    const open = await t.deps.knex('tasks').whereIn('environment_id', envs).whereIn('status', ['pending', 'running']);
    expect(open.map((task) => task.id)).toEqual([granted.id]);
  });

  it("gives the room back when the granted task's workflow is ended in Temporal: the host watch fails the task", async () => {
    const row = await t.deps.knex('tasks').where({ id: granted.id }).first();
    await t.deps.temporal.workflow.getHandle(row.workflow_id).terminate('ended by an operator in the Web UI');
    // nothing of the task's own will close it: it still says so, and still holds its room
    expect((await agent.get(`/tasks/${granted.id}`)).body.status).toMatch(/^(pending|running)$/);
    expect((await askAgain()).status).toBe(409);
    // a round of the host watch (every 5 s under npm start) asks about open tasks once they are a minute old
    await t.deps
      .knex('tasks')
      .where({ id: granted.id })
      .update({ created_at: new Date(Date.now() - 120_000) });
    const round = await t.deps.temporal.workflow.execute('watchHosts', {
      taskQueue: t.config.taskQueue,
      workflowId: `host-watch-${randomUUID()}`,
    });
    expect(round.orphaned).toEqual([granted.id]);
    const task = (await agent.get(`/tasks/${granted.id}`)).body;
    expect(task.status).toBe('failed');
    expect(task.error).toMatch(/^This task stopped: its workflow was ended from outside the console .*start it again/);
    expect(await hostMemory('p-d')).toEqual({ used: 1024, held: 0 });
    // its room is free again
    expect((await askAgain()).status).toBe(202);
  });
});
