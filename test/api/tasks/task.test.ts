import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import {
  addMember,
  createAccessToken,
  createProject,
  createTeam,
  createUser,
  sessionAgent,
} from '../../helpers/fixtures';
import { createEnvironment } from '../../helpers/deploy-fixtures';
import { whileTemporalUnreachable } from '../../helpers/temporal-unreachable';
import type { Agent } from '../../helpers/http';

const t = useTestContext();

let api: Agent;
let viewerApi: Agent;
let strangerApi: Agent;
let developer: { id: string; name: string };
let taskId: string;
let quietTaskId: string;
let otherTeamTaskId: string;
const LINES = Array.from({ length: 300 }, (_, i) => `line ${String(i + 1).padStart(3, '0')} ${'x'.repeat(20)}`);

async function insertTask(teamId: string, attrs: Record<string, unknown> = {}) {
  const id = randomUUID();
  await t.deps.knex('tasks').insert({
    id,
    team_id: teamId,
    kind: 'deployments',
    type: 'deploy',
    account_via: 'token',
    workflow_id: `wf-${id}`,
    status: 'running',
    ...attrs,
  });
  return id;
}

async function appendLog(id: string, lines: string[]) {
  const { max } = (await t.deps.knex('task_logs').where({ task_id: id }).max('seq as max').first()) as {
    max: number | null;
  };
  await t.deps.knex('task_logs').insert({ task_id: id, seq: (max ?? 0) + 1, chunk: lines.join('\n') + '\n' });
}

beforeAll(async () => {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  const dev = await createUser(t, { name: 'Dana Developer' });
  developer = dev;
  await addMember(t, team, dev, 'developer');
  const viewer = await createUser(t);
  await addMember(t, team, viewer, 'viewer');
  api = t.agent().withBearer(await createAccessToken(t, dev, team));
  viewerApi = t.agent().withBearer(await createAccessToken(t, viewer, team));
  taskId = await insertTask(team.id, { account_user_id: dev.id, account_via: 'cli', started_at: new Date() });
  // 300 lines in chunks of 10, as the log writer flushes them.
  for (let i = 0; i < LINES.length; i += 10) await appendLog(taskId, LINES.slice(i, i + 10));
  quietTaskId = await insertTask(team.id, { status: 'pending' });
  const stranger = await createUser(t);
  const otherTeam = await createTeam(t, stranger);
  strangerApi = t.agent().withBearer(await createAccessToken(t, stranger, otherTeam));
  otherTeamTaskId = await insertTask(otherTeam.id);
  await appendLog(otherTeamTaskId, ['secret output']);
});

describe('GET /tasks/{id}', () => {
  it('answers the task with the account that asked for it: id, name and via', async () => {
    const res = await api.get(`/tasks/${taskId}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: taskId,
      kind: 'deployments',
      type: 'deploy',
      status: 'running',
      account: { id: developer.id, name: 'Dana Developer', via: 'cli' },
    });
    expect(res.body.log_tail).toBeUndefined();
  });

  it('adds the last ~4 KB of the log with include=log, starting at a line start', async () => {
    const res = await api.get(`/tasks/${taskId}?include=log`);
    expect(res.status).toBe(200);
    const tail: string = res.body.log_tail;
    expect(tail.length).toBeGreaterThan(3500);
    expect(tail.length).toBeLessThanOrEqual(4096);
    const full = LINES.join('\n') + '\n';
    expect(full.endsWith(tail)).toBe(true);
    expect(tail).toMatch(/^line \d{3} x+\n/);
    expect(tail.endsWith('line 300 ' + 'x'.repeat(20) + '\n')).toBe(true);
    expect(res.body.log_seq).toBe(30);
  });

  it('gives the whole log as the tail when it is short, and an empty one when nothing was printed', async () => {
    const short = await insertTask((await t.deps.knex('tasks').where({ id: taskId }).first('team_id')).team_id);
    await appendLog(short, ['==> one', 'two']);
    expect((await api.get(`/tasks/${short}?include=log`)).body).toMatchObject({
      log_tail: '==> one\ntwo\n',
      log_seq: 1,
    });
    expect((await api.get(`/tasks/${quietTaskId}?include=log`)).body).toMatchObject({ log_tail: '', log_seq: 0 });
  });

  it('refuses an unknown include with 422', async () => {
    const res = await api.get(`/tasks/${taskId}?include=everything`);
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields)).toEqual(['include']);
  });

  it("answers 404 for another team's task, and for an id that names nothing", async () => {
    for (const path of [
      `/tasks/${otherTeamTaskId}`,
      `/tasks/${otherTeamTaskId}/log`,
      `/tasks/${randomUUID()}`,
      '/tasks/not-a-task',
    ]) {
      const res = await api.get(path);
      expect(res.status, path).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    expect((await strangerApi.get(`/tasks/${taskId}`)).status).toBe(404);
  });

  it("lets a viewer's token read a task and its log", async () => {
    expect((await viewerApi.get(`/tasks/${taskId}`)).status).toBe(200);
    expect((await viewerApi.get(`/tasks/${taskId}/log`)).status).toBe(200);
  });
});

describe('GET /tasks/{id}/log', () => {
  it('answers text/plain with everything printed so far, in order, with X-Log-Seq and X-Task-Status', async () => {
    const res = await api.get(`/tasks/${taskId}/log`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(res.text).toBe(LINES.join('\n') + '\n');
    expect(res.headers.get('x-log-seq')).toBe('30');
    expect(res.headers.get('x-task-status')).toBe('running');
  });

  it('answers only newer chunks with after=<seq>, and nothing new at the end', async () => {
    const res = await api.get(`/tasks/${taskId}/log?after=28`);
    expect(res.text).toBe(LINES.slice(280).join('\n') + '\n');
    expect(res.headers.get('x-log-seq')).toBe('30');
    const none = await api.get(`/tasks/${taskId}/log?after=30`);
    expect(none.status).toBe(200);
    expect(none.text).toBe('');
    expect(none.headers.get('x-log-seq')).toBe('30');
  });

  it('lets a client tail a task by polling until its status is final', async () => {
    const id = await insertTask((await t.deps.knex('tasks').where({ id: taskId }).first('team_id')).team_id, {
      status: 'pending',
    });
    let seq = 0;
    let text = '';
    const step = async () => {
      const res = await api.get(`/tasks/${id}/log?after=${seq}`);
      text += res.text;
      seq = Number(res.headers.get('x-log-seq'));
      return res.headers.get('x-task-status');
    };
    expect(await step()).toBe('pending');
    await appendLog(id, ['==> Building']);
    await t.deps.knex('tasks').where({ id }).update({ status: 'running' });
    expect(await step()).toBe('running');
    await appendLog(id, ['$ make', 'ok']);
    await appendLog(id, ['==> Live']);
    await t.deps.knex('tasks').where({ id }).update({ status: 'succeeded', finished_at: new Date() });
    expect(await step()).toBe('succeeded');
    expect(text).toBe('==> Building\n$ make\nok\n==> Live\n');
    expect(seq).toBe(3);
  });

  it('refuses an after that is not a whole number with 422 on after', async () => {
    for (const after of ['-1', 'abc', '1.5']) {
      const res = await api.get(`/tasks/${taskId}/log?after=${after}`);
      expect(res.status, after).toBe(422);
      expect(Object.keys(res.body.error.fields)).toEqual(['after']);
    }
  });

  it('is readable by a signed-in session too', async () => {
    const owner = await t.deps
      .knex('memberships')
      .join('tasks', 'tasks.team_id', 'memberships.team_id')
      .where('tasks.id', taskId)
      .andWhere('memberships.role', 'owner')
      .first('memberships.user_id');
    const session = await sessionAgent(t, await t.deps.knex('users').where({ id: owner.user_id }).first());
    const res = await session.get(`/tasks/${taskId}/log?after=29`);
    expect(res.text).toBe(LINES.slice(290).join('\n') + '\n');
  });
});

describe('a task asked for while Temporal does not answer', () => {
  it('is refused with 503 saying to try again shortly, and no task is recorded', async () => {
    const owner = await createUser(t);
    const team = await createTeam(t, owner);
    const project = await createProject(t, team);
    const environment = await createEnvironment(t, project);
    const agent = await sessionAgent(t, owner);
    const res = await whileTemporalUnreachable(t, () =>
      agent.post(`/environments/${environment.id}/maintenance`, { maintenance: true }),
    );
    expect(res.status, res.text).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.body.error).toMatchObject({ code: 'unavailable', message: expect.stringMatching(/try again shortly/) });
    expect(await t.deps.knex('tasks').where({ environment_id: environment.id })).toEqual([]);
    // and with Temporal back, the same request starts the task
    const again = await agent.post(`/environments/${environment.id}/maintenance`, { maintenance: true });
    expect(again.status, again.text).toBe(202);
  });
});
