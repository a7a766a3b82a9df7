import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { repositoriesDir, useTestContext, type TestContext } from '../../helpers/context';
import {
  addMember,
  createAccessToken,
  createProject,
  createTeam,
  createUser,
  sessionAgent,
} from '../../helpers/fixtures';
import { Environment } from '../../../db/models/environment';
import type { Team } from '../../../db/models/team';
import type { Res } from '../../helpers/http';

const t = useTestContext();
const scratch = mkdtempSync(join(repositoriesDir(), 'vc-environments-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A real git repository with one commit on main, a branch `staging` and a tag `v1`. */
function gitRepository(): string {
  const dir = join(scratch, randomUUID());
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe' });
  execFileSync('git', ['init', '-q', '-b', 'main', dir]);
  git('-c', 'user.email=t@example.test', '-c', 'user.name=T', 'commit', '-q', '--allow-empty', '-m', 'first');
  git('branch', 'staging');
  git('tag', 'v1');
  return dir;
}
const repository = gitRepository();

async function setup(ctx: TestContext = t) {
  const owner = await createUser(ctx);
  const team = await createTeam(ctx, owner);
  const project = await createProject(ctx, team, { repository_url: repository });
  return { owner, team, project, agent: await sessionAgent(ctx, owner) };
}

async function memberAgent(team: Team, role: 'admin' | 'developer' | 'viewer') {
  const user = await createUser(t);
  await addMember(t, team, user, role);
  return sessionAgent(t, user);
}

/** An environment row made directly (for listings), with a port far from the API's range. */
let nextPort = 62000;
async function insertEnvironment(team: Team, projectId: string, attrs: Partial<Environment> = {}) {
  return Environment.query(t.deps.knex).insertAndFetch({
    team_id: team.id,
    project_id: projectId,
    name: `env-${randomUUID().slice(0, 8)}`,
    git_ref: 'main',
    port: nextPort++,
    ...attrs,
  } as Partial<Environment>);
}

describe('GET /projects/{id}/environments/choices', () => {
  it("offers the repository's branches and the name rules", async () => {
    const { project, agent } = await setup();
    const res = await agent.get(`/projects/${project.id}/environments/choices`);
    expect(res.status).toBe(200);
    expect(res.body.blocked).toBe(false);
    expect(res.body.fields.git_ref.branches).toEqual(['main', 'staging']);
    expect(res.body.fields.git_ref.default).toBe('main');
    expect(res.body.fields.name).toMatchObject({ max_length: 63, taken: [] });
  });

  it('is blocked with no_repository before a repository is connected', async () => {
    const { team, agent } = await setup();
    const bare = await createProject(t, team);
    const res = await agent.get(`/projects/${bare.id}/environments/choices`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ blocked: true, reason: 'no_repository' });
  });

  it('refuses a developer with 403 and another team with 404', async () => {
    const { team, project } = await setup();
    expect(
      (await (await memberAgent(team, 'developer')).get(`/projects/${project.id}/environments/choices`)).status,
    ).toBe(403);
    const stranger = await setup();
    expect((await stranger.agent.get(`/projects/${project.id}/environments/choices`)).status).toBe(404);
  });
});

describe('POST /projects/{id}/environments', () => {
  it('creates an environment with its own port and url', async () => {
    const { team, project, agent } = await setup();
    const res = await agent.post(`/projects/${project.id}/environments`, { name: 'production', git_ref: 'main' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      project_id: project.id,
      team_id: team.id,
      name: 'production',
      git_ref: 'main',
      auto_deploy: false,
      url: expect.stringMatching(/^http:\/\/localhost:\d+$/),
      protected: true, // an environment named production is protected when created
      created_at: expect.any(String),
      maintenance: { on: false, note: null, since: null },
    });
    // the list shows it as GET /environments/{id} does (it showed every environment unprotected, out of maintenance)
    await t.deps
      .knex('environments')
      .where({ id: res.body.id })
      .update({ maintenance_on: true, maintenance_note: 'up' });
    const listed = (await agent.get(`/environments?project_id=${project.id}`)).body.data;
    expect(listed).toEqual([(await agent.get(`/environments/${res.body.id}`)).body]);
    expect(listed[0]).toMatchObject({ protected: true, maintenance: { on: true, note: 'up' } });
    const port = Number(new URL(res.body.url).port);
    expect(port).toBeGreaterThanOrEqual(t.config.environmentPorts.from);
    expect(port).toBeLessThanOrEqual(t.config.environmentPorts.to);
  });

  it('gives every environment a distinct port, never one whose deleted environment is still being retired', async () => {
    const { project, agent } = await setup();
    const urls: string[] = [];
    for (const name of ['a', 'b', 'c']) {
      urls.push((await agent.post(`/projects/${project.id}/environments`, { name, git_ref: 'staging' })).body.url);
    }
    const ports = urls.map((u) => Number(new URL(u).port));
    expect(new Set(ports).size).toBe(3);
    const envs = await Environment.query(t.deps.knex).where({ project_id: project.id }).orderBy('port');
    expect((await agent.delete(`/environments/${envs[0].id}`)).status).toBe(204);
    // No worker here: the deleted environment's sandbox is not taken off yet, so its port is held.
    expect(await t.deps.knex('retiring_ports').where({ port: envs[0].port }).first()).toBeDefined();
    const again = await agent.post(`/projects/${project.id}/environments`, { name: 'd', git_ref: 'v1' });
    expect(again.status, again.text).toBe(201);
    expect(ports).not.toContain(Number(new URL(again.body.url).port));
  });

  it('gives distinct ports to environments created at the same time', async () => {
    const { project, agent } = await setup();
    const results = await Promise.all(
      ['p1', 'p2', 'p3', 'p4'].map((name) =>
        agent.post(`/projects/${project.id}/environments`, { name, git_ref: 'main' }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    expect(new Set(results.map((r) => r.body.url)).size).toBe(4);
  });

  it('refuses a name taken in the project with 409 on name', async () => {
    const { project, agent } = await setup();
    await agent.post(`/projects/${project.id}/environments`, { name: 'prod', git_ref: 'main' });
    const res = await agent.post(`/projects/${project.id}/environments`, { name: 'prod', git_ref: 'main' });
    expect(res.status).toBe(409);
    expect(res.body.error.fields.name).toBeDefined();
  });

  it('refuses bad fields with 422 naming each', async () => {
    const { project, agent } = await setup();
    const res = await agent.post(`/projects/${project.id}/environments`, {
      name: 'Prod!',
      git_ref: 'a..b',
      auto_deploy: 'yes',
      x: 1,
    });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['auto_deploy', 'git_ref', 'name', 'x']);
  });

  it('refuses a git_ref the repository does not have with 422', async () => {
    const { project, agent } = await setup();
    const res = await agent.post(`/projects/${project.id}/environments`, { name: 'prod', git_ref: 'no-such-branch' });
    expect(res.status).toBe(422);
    expect(res.body.error.fields.git_ref).toBeDefined();
    expect(await Environment.query(t.deps.knex).where({ project_id: project.id })).toHaveLength(0);
  });

  it('refuses a project without a repository with 409 no_repository', async () => {
    const { team, agent } = await setup();
    const bare = await createProject(t, team);
    const res = await agent.post(`/projects/${bare.id}/environments`, { name: 'prod', git_ref: 'main' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('no_repository');
  });

  it('refuses a developer with 403, another team with 404, a token with token_not_allowed', async () => {
    const { owner, team, project } = await setup();
    const dev = await memberAgent(team, 'developer');
    expect((await dev.post(`/projects/${project.id}/environments`, { name: 'x', git_ref: 'main' })).status).toBe(403);
    const stranger = await setup();
    expect(
      (await stranger.agent.post(`/projects/${project.id}/environments`, { name: 'x', git_ref: 'main' })).status,
    ).toBe(404);
    const token = await createAccessToken(t, owner, team);
    const res = await t
      .agent()
      .withBearer(token)
      .post(`/projects/${project.id}/environments`, { name: 'x', git_ref: 'main' });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('token_not_allowed');
  });
});

describe('POST /projects/{id}/environments when the port range is spent', () => {
  const small = useTestContext({ env: { ENVIRONMENT_PORTS: '39990-39991' } });

  it('answers 409 no_port_available', async () => {
    const { project, agent } = await setup(small);
    expect((await agent.post(`/projects/${project.id}/environments`, { name: 'one', git_ref: 'main' })).status).toBe(
      201,
    );
    expect((await agent.post(`/projects/${project.id}/environments`, { name: 'two', git_ref: 'main' })).status).toBe(
      201,
    );
    const res = await agent.post(`/projects/${project.id}/environments`, { name: 'three', git_ref: 'main' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('no_port_available');
  });
});

describe('GET /environments', () => {
  it('walks every environment newest first with the cursor, without duplicates', async () => {
    const { team, project, agent } = await setup();
    const second = await createProject(t, team, { name: 'second' });
    const same = new Date('2030-01-01T00:00:00.123456Z');
    const made = [];
    for (let i = 0; i < 3; i++)
      made.push(await insertEnvironment(team, project.id, { created_at: same } as Partial<Environment>));
    for (let i = 0; i < 4; i++) made.push(await insertEnvironment(team, second.id));
    const seen: string[] = [];
    let before: string | null = null;
    let pages = 0;
    do {
      const res: Res<{ data: Array<{ id: string }>; next_before: string | null }> = await agent.get(
        `/environments?limit=2${before ? `&before=${encodeURIComponent(before)}` : ''}`,
      );
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.data.map((e) => e.id));
      before = res.body.next_before;
      pages += 1;
    } while (before && pages < 10);
    expect(pages).toBe(4);
    expect(new Set(seen).size).toBe(7);
    expect([...seen].sort()).toEqual(made.map((e) => e.id).sort());
    const rows = await Environment.query(t.deps.knex).whereIn('id', seen);
    const order = seen.map((id) => rows.find((r) => r.id === id)!);
    for (let i = 1; i < order.length; i++) {
      const [a, b] = [order[i - 1], order[i]];
      expect(
        a.created_at.getTime() > b.created_at.getTime() ||
          (a.created_at.getTime() === b.created_at.getTime() && a.id > b.id),
      ).toBe(true);
    }
  });

  it('filters by project_id and team_id', async () => {
    const { owner, team, project, agent } = await setup();
    const other = await createTeam(t, owner);
    const otherProject = await createProject(t, other);
    const a = await insertEnvironment(team, project.id);
    const b = await insertEnvironment(other, otherProject.id);
    expect(
      (await agent.get(`/environments?project_id=${project.id}`)).body.data.map((e: { id: string }) => e.id),
    ).toEqual([a.id]);
    expect((await agent.get(`/environments?team_id=${other.id}`)).body.data.map((e: { id: string }) => e.id)).toEqual([
      b.id,
    ]);
    const all = await agent.get('/environments');
    expect(all.body.data.map((e: { id: string }) => e.id).sort()).toEqual([a.id, b.id].sort());
    expect(all.body.next_before).toBeNull();
  });

  it("shows a token only its team's environments", async () => {
    const { owner, team, project } = await setup();
    const other = await createTeam(t, owner);
    const mine = await insertEnvironment(team, project.id);
    await insertEnvironment(other, (await createProject(t, other)).id);
    const token = await createAccessToken(t, owner, team);
    const res = await t.agent().withBearer(token).get('/environments');
    expect(res.status).toBe(200);
    expect(res.body.data.map((e: { id: string }) => e.id)).toEqual([mine.id]);
  });

  it('refuses a bad limit and a bad cursor with 422', async () => {
    const { agent } = await setup();
    for (const q of ['limit=0', 'limit=101', 'limit=abc']) {
      const res = await agent.get(`/environments?${q}`);
      expect(res.status, q).toBe(422);
      expect(res.body.error.fields.limit, q).toBeDefined();
    }
    const bad = await agent.get('/environments?before=not-a-cursor');
    expect(bad.status).toBe(422);
    expect(bad.body.error.fields.before).toBeDefined();
  });
});

describe('GET /environments/{id}', () => {
  it('shows one environment to a member and to a token of its team', async () => {
    const { owner, team, project } = await setup();
    const env = await insertEnvironment(team, project.id);
    const viewer = await memberAgent(team, 'viewer');
    const res = await viewer.get(`/environments/${env.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: env.id, name: env.name, url: `http://localhost:${env.port}` });
    const token = await createAccessToken(t, owner, team);
    expect((await t.agent().withBearer(token).get(`/environments/${env.id}`)).status).toBe(200);
  });

  it("answers 404 for another team's environment, also to a token", async () => {
    const { owner, team, project } = await setup();
    const env = await insertEnvironment(team, project.id);
    const stranger = await setup();
    expect((await stranger.agent.get(`/environments/${env.id}`)).status).toBe(404);
    const otherTeam = await createTeam(t, owner);
    const token = await createAccessToken(t, owner, otherTeam);
    expect((await t.agent().withBearer(token).get(`/environments/${env.id}`)).status).toBe(404);
    expect((await stranger.agent.get(`/environments/${randomUUID()}`)).status).toBe(404);
  });
});

describe('PATCH /environments/{id}', () => {
  it('changes git_ref and auto_deploy for an admin', async () => {
    const { team, project } = await setup();
    const env = await insertEnvironment(team, project.id);
    const admin = await memberAgent(team, 'admin');
    const res = await admin.patch(`/environments/${env.id}`, { git_ref: 'staging', auto_deploy: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: env.id, git_ref: 'staging', auto_deploy: true });
    expect(await Environment.query(t.deps.knex).findById(env.id)).toMatchObject({
      git_ref: 'staging',
      auto_deploy: true,
    });
  });

  it('refuses an unknown ref, an empty body and wrong types with 422, changing nothing', async () => {
    const { team, project, agent } = await setup();
    const env = await insertEnvironment(team, project.id);
    expect(
      (await agent.patch(`/environments/${env.id}`, { git_ref: 'nope', auto_deploy: true })).body.error.fields.git_ref,
    ).toBeDefined();
    expect((await agent.patch(`/environments/${env.id}`, {})).status).toBe(422);
    expect(
      (await agent.patch(`/environments/${env.id}`, { auto_deploy: 1 })).body.error.fields.auto_deploy,
    ).toBeDefined();
    expect(await Environment.query(t.deps.knex).findById(env.id)).toMatchObject({
      git_ref: 'main',
      auto_deploy: false,
    });
  });

  it('refuses a developer with 403 and a token with token_not_allowed', async () => {
    const { owner, team, project } = await setup();
    const env = await insertEnvironment(team, project.id);
    expect(
      (await (await memberAgent(team, 'developer')).patch(`/environments/${env.id}`, { auto_deploy: true })).status,
    ).toBe(403);
    const token = await createAccessToken(t, owner, team);
    const res = await t.agent().withBearer(token).patch(`/environments/${env.id}`, { auto_deploy: true });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('token_not_allowed');
  });
});

describe('DELETE /environments/{id}', () => {
  it('deletes an environment', async () => {
    const { team, project, agent } = await setup();
    const env = await insertEnvironment(team, project.id);
    expect((await agent.delete(`/environments/${env.id}`)).status).toBe(204);
    expect((await agent.get(`/environments/${env.id}`)).status).toBe(404);
  });

  it('refuses while a task is pending on it (409 deploy_in_progress)', async () => {
    const { team, project, agent } = await setup();
    const env = await insertEnvironment(team, project.id);
    const [task] = await t.deps
      .knex('tasks')
      .insert({
        team_id: team.id,
        project_id: project.id,
        environment_id: env.id,
        kind: 'deployments',
        type: 'deploy',
        account_via: 'session',
        workflow_id: `wf-${env.id}`,
      })
      .returning('id');
    const res = await agent.delete(`/environments/${env.id}`);
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'deploy_in_progress', task_id: task.id });
    expect(await Environment.query(t.deps.knex).findById(env.id)).toBeDefined();
  });

  it('refuses a developer with 403 and another team with 404', async () => {
    const { team, project } = await setup();
    const env = await insertEnvironment(team, project.id);
    expect((await (await memberAgent(team, 'developer')).delete(`/environments/${env.id}`)).status).toBe(403);
    expect((await (await setup()).agent.delete(`/environments/${env.id}`)).status).toBe(404);
    expect(await Environment.query(t.deps.knex).findById(env.id)).toBeDefined();
  });
});
