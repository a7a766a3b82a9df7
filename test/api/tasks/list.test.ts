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
import type { Agent } from '../../helpers/http';

const t = useTestContext();

const KINDS = ['deployments', 'backups', 'machines', 'configuration', 'maintenance'] as const;
const TYPES = ['deploy', 'build', 'backup', 'resize'];
let api: Agent;
let viewerApi: Agent;
let otherTeamTaskId: string;
let teamId: string;
let projectIds: string[];
let envIds: string[];
let rows: Array<{ id: string; project_id: string; environment_id: string; kind: string; type: string }>;

beforeAll(async () => {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  teamId = team.id;
  const developer = await createUser(t);
  await addMember(t, team, developer, 'developer');
  const viewer = await createUser(t);
  await addMember(t, team, viewer, 'viewer');
  api = t.agent().withBearer(await createAccessToken(t, developer, team));
  viewerApi = t.agent().withBearer(await createAccessToken(t, viewer, team));
  const projects = [await createProject(t, team), await createProject(t, team)];
  projectIds = projects.map((p) => p.id);
  const envs = [await createEnvironment(t, projects[0]), await createEnvironment(t, projects[1])];
  envIds = envs.map((e) => e.id);
  // 250 tasks in the team, in creation order (seq), spread over projects, kinds and types.
  rows = Array.from({ length: 250 }, (_, i) => ({
    id: randomUUID(),
    team_id: team.id,
    project_id: projects[i % 2].id,
    environment_id: envs[i % 2].id,
    kind: KINDS[i % 5],
    type: TYPES[i % 4],
    status: i % 3 === 0 ? 'succeeded' : 'failed',
    account_user_id: developer.id,
    account_via: 'token',
    workflow_id: `wf-${i}`,
    finished_at: new Date(),
  }));
  await t.deps.knex('tasks').insert(rows);
  // Another team's task, which nobody here sees.
  const stranger = await createUser(t);
  const otherTeam = await createTeam(t, stranger);
  otherTeamTaskId = randomUUID();
  await t.deps.knex('tasks').insert({
    id: otherTeamTaskId,
    team_id: otherTeam.id,
    kind: 'deployments',
    type: 'deploy',
    account_via: 'session',
    workflow_id: 'x',
    status: 'running',
  });
});

const newestFirst = () => [...rows].reverse();

async function walk(agent: Agent, query: string) {
  const ids: string[] = [];
  let before: string | null = null;
  let pages = 0;
  do {
    const res: { status: number; text: string; body: { data: Array<{ id: string }>; next_before: string | null } } =
      await agent.get(`/tasks?${query}${before ? `&before=${before}` : ''}`);
    expect(res.status, res.text).toBe(200);
    ids.push(...res.body.data.map((x: { id: string }) => x.id));
    before = res.body.next_before;
    pages += 1;
  } while (before && pages < 100);
  return { ids, pages };
}

describe('GET /tasks', () => {
  it("answers the newest 20 tasks of the token's team with their account by default", async () => {
    const res = await api.get('/tasks');
    expect(res.status).toBe(200);
    expect(res.body.data.map((x: { id: string }) => x.id)).toEqual(
      newestFirst()
        .slice(0, 20)
        .map((r) => r.id),
    );
    expect(res.body.data[0]).toMatchObject({ team_id: teamId, account: { via: 'token', name: expect.any(String) } });
    expect(typeof res.body.next_before).toBe('string');
  });

  it('walks every task once, in order, page by page, with next_before null on the last page', async () => {
    const { ids, pages } = await walk(api, 'limit=100');
    expect(pages).toBe(3);
    expect(ids).toEqual(newestFirst().map((r) => r.id));
    expect(new Set(ids).size).toBe(250);
    expect(ids).not.toContain(otherTeamTaskId);
  });

  it('keeps a cursor stable while newer tasks arrive (no duplicates, no gaps)', async () => {
    const first = await api.get('/tasks?limit=7');
    const extra = {
      ...rows[0],
      id: randomUUID(),
      workflow_id: 'late',
      team_id: teamId,
      status: 'pending',
      account_via: 'token',
      finished_at: null,
    };
    await t.deps.knex('tasks').insert(extra);
    try {
      const second = await api.get(`/tasks?limit=7&before=${first.body.next_before}`);
      expect(second.body.data.map((x: { id: string }) => x.id)).toEqual(
        newestFirst()
          .slice(7, 14)
          .map((r) => r.id),
      );
    } finally {
      await t.deps.knex('tasks').where({ id: extra.id }).delete();
    }
  });

  it('filters by project, environment, kind and type, together', async () => {
    const byProject = await walk(api, `limit=100&project=${projectIds[1]}`);
    expect(byProject.ids).toEqual(
      newestFirst()
        .filter((r) => r.project_id === projectIds[1])
        .map((r) => r.id),
    );
    const byEnv = await walk(api, `limit=100&environment=${envIds[0]}&kind=backups`);
    expect(byEnv.ids).toEqual(
      newestFirst()
        .filter((r) => r.environment_id === envIds[0] && r.kind === 'backups')
        .map((r) => r.id),
    );
    const byType = await walk(api, 'limit=100&type=build&kind=machines');
    expect(byType.ids.length).toBeGreaterThan(0);
    expect(byType.ids).toEqual(
      newestFirst()
        .filter((r) => r.type === 'build' && r.kind === 'machines')
        .map((r) => r.id),
    );
  });

  it('answers an empty page for a team the token does not reach', async () => {
    const other = await createUser(t);
    const otherTeam = await createTeam(t, other);
    const res = await api.get(`/tasks?team=${otherTeam.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [], next_before: null });
  });

  it('shows a session caller the tasks of each team they belong to', async () => {
    const res = await api.get(`/tasks?team=${teamId}&limit=1`);
    expect(res.body.data).toHaveLength(1);
    const owner = await t.deps.knex('memberships').where({ team_id: teamId, role: 'owner' }).first('user_id');
    const user = await t.deps.knex('users').where({ id: owner.user_id }).first();
    const session = await sessionAgent(t, user);
    const mine = await session.get('/tasks?limit=100');
    expect(mine.status).toBe(200);
    expect(mine.body.data).toHaveLength(100);
    expect(mine.body.data.every((x: { team_id: string }) => x.team_id === teamId)).toBe(true);
  });

  it("lets a viewer's token read tasks", async () => {
    const res = await viewerApi.get('/tasks?limit=5');
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(5);
  });

  it('refuses limit 0 and 101 with 422 on limit', async () => {
    for (const limit of ['0', '101', 'ten', '2.5']) {
      const res = await api.get(`/tasks?limit=${limit}`);
      expect(res.status, limit).toBe(422);
      expect(res.body.error.code).toBe('invalid');
      expect(Object.keys(res.body.error.fields)).toEqual(['limit']);
    }
    expect((await api.get('/tasks?limit=1')).body.data).toHaveLength(1);
    expect((await api.get('/tasks?limit=100')).body.data).toHaveLength(100);
  });

  it('names every invalid filter in one 422', async () => {
    const res = await api.get(
      '/tasks?team=nope&project=1&environment=x&kind=parties&type=Not%20A%20Type&before=garbage',
    );
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields).sort()).toEqual([
      'before',
      'environment',
      'kind',
      'project',
      'team',
      'type',
    ]);
    expect(res.body.error.fields.kind).toMatch(/deployments, backups, machines, configuration, maintenance/);
  });

  it('refuses the old filter names and any unknown parameter with 422 naming each (never ignored)', async () => {
    const res = await api.get(`/tasks?environment_id=${randomUUID()}&team_id=x&colour=red`);
    expect(res.status).toBe(422);
    expect(res.body.error.fields).toEqual({
      environment_id: 'unknown query parameter',
      team_id: 'unknown query parameter',
      colour: 'unknown query parameter',
    });
  });

  it('refuses a cursor of another list', async () => {
    const envs = await api.get('/environments?limit=1');
    const foreign =
      envs.body.next_before ?? Buffer.from('r:2020-01-01T00:00:00.000000Z|' + randomUUID()).toString('base64url');
    const res = await api.get(`/tasks?before=${foreign}`);
    expect(res.status).toBe(422);
    expect(res.body.error.fields).toEqual({ before: 'is not a cursor from next_before' });
  });
});

describe('GET /tasks ETag', () => {
  it('answers 304 with no body to If-None-Match with the current ETag, and the ETag again', async () => {
    const res = await api.get('/tasks?limit=10');
    const etag = res.headers.get('etag');
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const again = await api.get('/tasks?limit=10', { headers: { 'if-none-match': etag! } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
  });

  it('changes when a task of the page changes status, and answers 200 to the old ETag', async () => {
    const res = await api.get('/tasks?limit=10');
    const etag = res.headers.get('etag')!;
    const newest = rows.at(-1)!;
    const before = await t.deps.knex('tasks').where({ id: newest.id }).first('status', 'finished_at');
    await t.deps.knex('tasks').where({ id: newest.id }).update({ status: 'cancelled' });
    try {
      const changed = await api.get('/tasks?limit=10', { headers: { 'if-none-match': etag } });
      expect(changed.status).toBe(200);
      expect(changed.body.data[0]).toMatchObject({ id: newest.id, status: 'cancelled' });
      expect(changed.headers.get('etag')).not.toBe(etag);
    } finally {
      await t.deps.knex('tasks').where({ id: newest.id }).update(before);
    }
    expect((await api.get('/tasks?limit=10', { headers: { 'if-none-match': etag } })).status).toBe(304);
  });

  it('differs between pages', async () => {
    const first = await api.get('/tasks?limit=10');
    const second = await api.get(`/tasks?limit=10&before=${first.body.next_before}`);
    expect(second.headers.get('etag')).not.toBe(first.headers.get('etag'));
  });

  it('counts 304 answers toward the token rate limit (RateLimit-Remaining goes down)', async () => {
    const res = await api.get('/tasks?limit=3');
    const etag = res.headers.get('etag')!;
    let remaining = Number(res.headers.get('ratelimit-remaining'));
    expect(Number.isInteger(remaining)).toBe(true);
    for (let i = 0; i < 3; i++) {
      const r = await api.get('/tasks?limit=3', { headers: { 'if-none-match': etag } });
      expect(r.status).toBe(304);
      const now = Number(r.headers.get('ratelimit-remaining'));
      expect(now).toBe(remaining - 1);
      remaining = now;
    }
  });
});
