/**
 * CONTRACT "Tasks": a deploy-like task records when each phase ended, and GET /tasks/{id} answers them as
 * `phases: [{name, at}]` in order (GET /tasks leaves them out). A redeploy puts the live release out as new
 * processes: a new process answers through the edge afterwards.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { addMember, createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { createSharedAppRepo, fetchEnvironment, runTaskOk, taskLog } from '../../helpers/deploy-fixtures';
import type { Agent } from '../../helpers/http';
import { until } from '../../helpers/until';

const t = useTestContext({ worker: true });
let owner: Agent;
let env: { id: string; port: number };
let serverId: string;
const repo = createSharedAppRepo();

type Phase = { name: string; at: string };
type TaskView = { id: string; finished_at: string | null; phases: Phase[] };

const TIMEOUT = 90_000;

async function run(path: string, body?: unknown): Promise<TaskView> {
  const done = await runTaskOk(t, owner, path, body, TIMEOUT);
  return (await owner.get(`/tasks/${done.id}`)).body;
}

/** The task's phases once `last` is among them (old_stopped comes after the task ended). */
async function phasesUntil(id: string, last: string): Promise<TaskView> {
  return until(
    `task ${id} to record ${last}`,
    async () => (await owner.get(`/tasks/${id}`)).body as TaskView,
    (task) => task.phases.some((p) => p.name === last),
    { timeoutMs: 30_000 },
  );
}

/** The names in order, and the moments never going back. */
function expectOrdered(task: TaskView, names: string[]) {
  expect(task.phases.map((p) => p.name)).toEqual(names);
  const times = task.phases.map((p) => Date.parse(p.at));
  for (let i = 1; i < times.length; i++)
    expect(times[i], `${names[i]} after ${names[i - 1]}`).toBeGreaterThanOrEqual(times[i - 1]);
}

const GO_LIVE = ['process_started', 'healthy', 'edge_switched'];

beforeAll(async () => {
  repo.commit('v1');
  const user = await createUser(t);
  const team = await createTeam(t, user);
  const project = await createProject(t, team, { repository_url: repo.dir });
  owner = await sessionAgent(t, user);
  const dev = await createUser(t);
  await addMember(t, team, dev, 'developer');
  const created = await owner.post(`/projects/${project.id}/environments`, { name: 'production', git_ref: 'main' });
  expect(created.status, created.text).toBe(201);
  const row = await t.deps.knex('environments').where({ id: created.body.id }).first('port');
  env = { id: created.body.id, port: row.port };
  serverId = (await owner.get('/servers')).body.data[0].id;
}, TIMEOUT);

describe('phases of a deploy', () => {
  it('a first deploy records its build and go-live, succeeds at edge_switched, and says in its first line that it builds', async () => {
    const task = await run(`/environments/${env.id}/deploy`);
    expectOrdered(task, ['queued', 'started', 'build_done', 'release_ready', ...GO_LIVE]);
    const switched = task.phases.find((p) => p.name === 'edge_switched')!;
    expect(Date.parse(task.finished_at!)).toBeGreaterThanOrEqual(Date.parse(switched.at));
    const first = (await taskLog(t, owner, task.id)).split('\n')[0];
    expect(first).toMatch(/^==> Resolving main in .*: [0-9a-f]{7}, which needs a build$/);
    expect(await fetchEnvironment(env.port)).toEqual({ status: 200, text: 'v1' });
  });

  it('GET /tasks leaves the phases out', async () => {
    const list = await owner.get(`/tasks?environment=${env.id}`);
    expect(list.status).toBe(200);
    expect(list.body.data.length).toBeGreaterThan(0);
    for (const task of list.body.data) expect(task).not.toHaveProperty('phases');
  });

  it('a deploy of a commit built already says so first, and records old_stopped after it finished', async () => {
    const task = await run(`/environments/${env.id}/deploy`, { skip_steps: true });
    expect((await taskLog(t, owner, task.id)).split('\n')[0]).toMatch(/is built already; no build needed$/);
    const later = await phasesUntil(task.id, 'old_stopped');
    expectOrdered(later, ['queued', 'started', 'release_ready', ...GO_LIVE, 'old_stopped']);
    const stopped = later.phases.at(-1)!;
    expect(Date.parse(stopped.at)).toBeGreaterThanOrEqual(Date.parse(later.finished_at!));
  });
});

describe('a redeploy replaces the processes', () => {
  it('with skip_steps: a new process answers through the edge, and the phases show it', async () => {
    const before = await fetchEnvironment(env.port, '/boot');
    expect(before.status).toBe(200);
    const task = await run(`/environments/${env.id}/redeploy`, { skip_steps: true });
    const after = await fetchEnvironment(env.port, '/boot');
    expect(after.status).toBe(200);
    expect(after.text).not.toBe(before.text);
    expectOrdered(await phasesUntil(task.id, 'old_stopped'), [
      'queued',
      'started',
      'release_ready',
      ...GO_LIVE,
      'old_stopped',
    ]);
  });

  it('with its deploy steps too', async () => {
    const before = await fetchEnvironment(env.port, '/boot');
    await run(`/environments/${env.id}/redeploy`);
    expect((await fetchEnvironment(env.port, '/boot')).text).not.toBe(before.text);
  });
});

describe('phases of the other deploy-like tasks', () => {
  it('a rollback to a kept release', async () => {
    repo.commit('v2');
    await run(`/environments/${env.id}/deploy`);
    expect(await fetchEnvironment(env.port)).toEqual({ status: 200, text: 'v2' });
    const task = await run(`/environments/${env.id}/rollback`);
    expect(await fetchEnvironment(env.port)).toEqual({ status: 200, text: 'v1' });
    expectOrdered(await phasesUntil(task.id, 'old_stopped'), [
      'queued',
      'started',
      'release_ready',
      ...GO_LIVE,
      'old_stopped',
    ]);
  });

  it('a build: built, and its release ready; nothing goes live', async () => {
    repo.commit('v3');
    const task = await run(`/environments/${env.id}/build`);
    expectOrdered(task, ['queued', 'started', 'build_done', 'release_ready']);
  });

  it('a variables apply: a new process with the variables', async () => {
    const before = await fetchEnvironment(env.port, '/boot');
    const task = await run(`/environments/${env.id}/variables/apply`);
    expect((await fetchEnvironment(env.port, '/boot')).text).not.toBe(before.text);
    expectOrdered(await phasesUntil(task.id, 'old_stopped'), [
      'queued',
      'started',
      'release_ready',
      ...GO_LIVE,
      'old_stopped',
    ]);
  });

  it('a reboot', async () => {
    const task = await run(`/servers/${serverId}/reboot`);
    expectOrdered(await phasesUntil(task.id, 'old_stopped'), [
      'queued',
      'started',
      'release_ready',
      ...GO_LIVE,
      'old_stopped',
    ]);
  });

  it('a scale up, then down (the extra instance stops after the task)', async () => {
    const up = await run(`/environments/${env.id}/scale`, { instances: 2 });
    expectOrdered(up, ['queued', 'started', 'release_ready', ...GO_LIVE]);
    const down = await run(`/environments/${env.id}/scale`, { instances: 1 });
    expectOrdered(await phasesUntil(down.id, 'old_stopped'), [
      'queued',
      'started',
      'release_ready',
      'edge_switched',
      'old_stopped',
    ]);
  });
});
