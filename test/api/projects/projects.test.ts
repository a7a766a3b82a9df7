import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { repositoriesDir, useTestContext } from '../../helpers/context';
import {
  addMember,
  createAccessToken,
  createProject,
  createTeam,
  createUser,
  sessionAgent,
} from '../../helpers/fixtures';
import { Project } from '../../../db/models/project';
import type { Team } from '../../../db/models/team';

const t = useTestContext();
const scratch = mkdtempSync(join(repositoriesDir(), 'vc-projects-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A real git repository with one commit on main and a second branch. */
function gitRepository(name = randomUUID()): string {
  const dir = join(scratch, name);
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: dir, stdio: 'pipe', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } });
  execFileSync('git', ['init', '-q', '-b', 'main', dir]);
  git('-c', 'user.email=t@example.test', '-c', 'user.name=T', 'commit', '-q', '--allow-empty', '-m', 'first');
  git('branch', 'staging');
  return dir;
}

async function ownerTeam() {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  return { owner, team, agent: await sessionAgent(t, owner) };
}

async function memberAgent(team: Team, role: 'admin' | 'developer' | 'viewer') {
  const user = await createUser(t);
  await addMember(t, team, user, role);
  return { user, agent: await sessionAgent(t, user) };
}

describe('GET /projects', () => {
  it("lists the projects of the caller's teams, filtered by team_id", async () => {
    const { owner, team, agent } = await ownerTeam();
    const second = await createTeam(t, owner);
    const a = await createProject(t, team, { name: 'api' });
    const b = await createProject(t, second, { name: 'web' });
    await createProject(t, await createTeam(t, await createUser(t)), { name: 'theirs' });
    const all = await agent.get('/projects');
    expect(all.status).toBe(200);
    expect(all.body.data.map((p: { id: string }) => p.id)).toEqual([a.id, b.id]);
    expect(all.body.data[0]).toEqual({
      id: a.id,
      team_id: team.id,
      name: 'api',
      repository: null,
      created_at: expect.any(String),
    });
    const filtered = await agent.get(`/projects?team_id=${second.id}`);
    expect(filtered.body.data.map((p: { id: string }) => p.id)).toEqual([b.id]);
  });

  it("shows a token only its team's projects", async () => {
    const { owner, team } = await ownerTeam();
    const other = await createTeam(t, owner);
    const mine = await createProject(t, team);
    await createProject(t, other);
    const token = await createAccessToken(t, owner, team);
    const res = await t.agent().withBearer(token).get('/projects');
    expect(res.status).toBe(200);
    expect(res.body.data.map((p: { id: string }) => p.id)).toEqual([mine.id]);
    expect((await t.agent().withBearer(token).get(`/projects?team_id=${other.id}`)).body.data).toEqual([]);
  });

  it('refuses a malformed team_id with 422', async () => {
    const { agent } = await ownerTeam();
    const res = await agent.get('/projects?team_id=nope');
    expect(res.status).toBe(422);
    expect(res.body.error.fields.team_id).toBeDefined();
  });
});

describe('GET /projects/new', () => {
  it('offers the teams where the caller may create projects', async () => {
    const { team, agent, owner } = await ownerTeam();
    const elsewhere = await createTeam(t, await createUser(t));
    await addMember(t, elsewhere, owner, 'developer');
    const res = await agent.get('/projects/new');
    expect(res.status).toBe(200);
    expect(res.body.blocked).toBe(false);
    expect(res.body.teams.map((x: { id: string }) => x.id)).toEqual([team.id]);
    expect(res.body.fields.name).toMatchObject({ max_length: 63 });
  });

  it('is blocked for someone who is admin nowhere', async () => {
    const res = await (await sessionAgent(t, await createUser(t))).get('/projects/new');
    expect(res.body).toMatchObject({ blocked: true, reason: 'no_team', teams: [] });
  });
});

describe('POST /projects', () => {
  it('creates a project for an admin', async () => {
    const { team } = await ownerTeam();
    const { agent } = await memberAgent(team, 'admin');
    const res = await agent.post('/projects', { team_id: team.id, name: 'shop-2' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      team_id: team.id,
      name: 'shop-2',
      repository: null,
      created_at: expect.any(String),
    });
  });

  it('refuses names outside the rules, naming the field', async () => {
    const { team, agent } = await ownerTeam();
    for (const name of ['', 'Shop', '-shop', 'shop-', 'sh_op', 'a'.repeat(64)]) {
      const res = await agent.post('/projects', { team_id: team.id, name });
      expect(res.status, name).toBe(422);
      expect(res.body.error.fields.name, name).toBeDefined();
    }
    expect((await agent.post('/projects', { team_id: team.id, name: 'a'.repeat(63) })).status).toBe(201);
    expect(await Project.query(t.deps.knex).where({ team_id: team.id })).toHaveLength(1);
  });

  it('refuses a name taken in the team with 409 on name, allows it in another team', async () => {
    const { owner, team, agent } = await ownerTeam();
    await createProject(t, team, { name: 'dup' });
    const res = await agent.post('/projects', { team_id: team.id, name: 'dup' });
    expect(res.status).toBe(409);
    expect(res.body.error.fields.name).toBeDefined();
    const other = await createTeam(t, owner);
    expect((await agent.post('/projects', { team_id: other.id, name: 'dup' })).status).toBe(201);
  });

  it('refuses a developer with 403 and another team with 404', async () => {
    const { team } = await ownerTeam();
    const { agent } = await memberAgent(team, 'developer');
    expect((await agent.post('/projects', { team_id: team.id, name: 'x' })).status).toBe(403);
    const stranger = await ownerTeam();
    expect((await stranger.agent.post('/projects', { team_id: team.id, name: 'x' })).status).toBe(404);
    expect(await Project.query(t.deps.knex).where({ team_id: team.id })).toHaveLength(0);
  });

  it('refuses a token with 403 token_not_allowed', async () => {
    const { owner, team } = await ownerTeam();
    const token = await createAccessToken(t, owner, team);
    const res = await t.agent().withBearer(token).post('/projects', { team_id: team.id, name: 'ci' });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('token_not_allowed');
  });

  it('refuses missing and unknown fields, naming each', async () => {
    const { agent } = await ownerTeam();
    const res = await agent.post('/projects', { colour: 'red' });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['colour', 'name', 'team_id']);
  });
});

describe('DELETE /projects/{id}', () => {
  it('deletes a project without environments', async () => {
    const { team, agent } = await ownerTeam();
    const p = await createProject(t, team);
    expect((await agent.delete(`/projects/${p.id}`)).status).toBe(204);
    expect(await Project.query(t.deps.knex).findById(p.id)).toBeUndefined();
  });

  it('refuses while it has environments (409 project_not_empty)', async () => {
    const { team, agent } = await ownerTeam();
    const p = await createProject(t, team);
    await t.deps
      .knex('environments')
      .insert({ team_id: team.id, project_id: p.id, name: 'prod', git_ref: 'main', port: 1 });
    const res = await agent.delete(`/projects/${p.id}`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('project_not_empty');
  });
});

describe('GET /projects/{id}/repository', () => {
  it('answers url null before a repository is connected', async () => {
    const { team } = await ownerTeam();
    const { agent } = await memberAgent(team, 'viewer');
    const p = await createProject(t, team);
    const res = await agent.get(`/projects/${p.id}/repository`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ url: null, default_branch: null, reachable: null, checked_at: null, webhook_url: null });
  });

  it("answers 404 for another team's project", async () => {
    const { team } = await ownerTeam();
    const p = await createProject(t, team);
    const stranger = await ownerTeam();
    expect((await stranger.agent.get(`/projects/${p.id}/repository`)).status).toBe(404);
    expect((await stranger.agent.get(`/projects/${randomUUID()}/repository`)).status).toBe(404);
  });
});

describe('POST /projects/{id}/repository', () => {
  it('connects a local repository path that git can read', async () => {
    const { team, agent } = await ownerTeam();
    const p = await createProject(t, team);
    const dir = gitRepository();
    const res = await agent.post(`/projects/${p.id}/repository`, { url: dir });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ url: dir, reachable: true, webhook_secret: expect.stringMatching(/^whsec_/) });
    const shown = (await agent.get(`/projects/${p.id}/repository`)).body;
    expect(shown).toMatchObject({ url: dir, reachable: true, checked_at: expect.any(String) });
    expect(shown.webhook_url).toMatch(new RegExp(`/api/vc/v1/hooks/git/${p.id}$`));
    expect(shown).not.toHaveProperty('webhook_secret');
    expect((await agent.get('/projects')).body.data.find((x: { id: string }) => x.id === p.id).repository).toEqual({
      url: dir,
    });
  });

  it('connects a file:// URL too', async () => {
    const { team, agent } = await ownerTeam();
    const p = await createProject(t, team);
    const url = `file://${gitRepository()}`;
    expect((await agent.post(`/projects/${p.id}/repository`, { url })).body).toMatchObject({ url, reachable: true });
  });

  it('refuses what git cannot read with 422 on url and changes nothing', async () => {
    const { team, agent } = await ownerTeam();
    const p = await createProject(t, team);
    const res = await agent.post(`/projects/${p.id}/repository`, { url: join(scratch, 'missing') });
    expect(res.status).toBe(422);
    expect(res.body.error.fields.url).toMatch(/git/);
    expect((await Project.query(t.deps.knex).findById(p.id))!.repository_url).toBeNull();
  });

  it('never shows credentials from the URL, in answers or refusals', async () => {
    const { team, agent } = await ownerTeam();
    const p = await createProject(t, team);
    const res = await agent.post(`/projects/${p.id}/repository`, {
      url: 'https://deploy:s3cr3t-pass@127.0.0.1:1/org/repo.git',
    });
    expect(res.status).toBe(422);
    expect(res.text).not.toContain('s3cr3t-pass');
    expect(res.text).not.toContain('deploy:');
    const dir = gitRepository();
    await t.deps
      .knex('projects')
      .where({ id: p.id })
      .update({ repository_url: `ssh://git:hunter22@localhost${dir}` });
    const shown = await agent.get(`/projects/${p.id}/repository`);
    expect(shown.body.url).toBe(`ssh://git@localhost${dir}`);
    expect((await agent.get('/projects')).text).not.toContain('hunter22');
  });

  it('refuses an option-like url and ext:: transports', async () => {
    const { team, agent } = await ownerTeam();
    const p = await createProject(t, team);
    expect((await agent.post(`/projects/${p.id}/repository`, { url: '--upload-pack=touch /tmp/x' })).status).toBe(422);
    const ext = await agent.post(`/projects/${p.id}/repository`, { url: 'ext::sh -c true' });
    expect(ext.status).toBe(422);
    expect(ext.body.error.fields.url).toBeDefined();
  });

  it('refuses a developer with 403', async () => {
    const { team } = await ownerTeam();
    const { agent } = await memberAgent(team, 'developer');
    const p = await createProject(t, team);
    expect((await agent.post(`/projects/${p.id}/repository`, { url: gitRepository() })).status).toBe(403);
  });
});
