import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { addMember, createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';

const t = useTestContext();

async function world() {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  const project = await createProject(t, team);
  return { owner, team, project, agent: await sessionAgent(t, owner) };
}

describe('/projects/{id}/registries', () => {
  it('saves credentials, lists hosts and user names only, replaces and forgets them', async () => {
    const { project, agent } = await world();
    const saved = await agent.post(`/projects/${project.id}/registries`, {
      host: 'NPM.Example.test:8443',
      username: 'ci',
      password: 's3cret-registry-pass',
    });
    expect(saved.status).toBe(201);
    expect(saved.body).toMatchObject({ host: 'npm.example.test:8443', username: 'ci' });
    await agent.post(`/projects/${project.id}/registries`, { host: 'ghcr.io', username: 'bot', password: 'ghp_other' });
    await agent.post(`/projects/${project.id}/registries`, { host: 'ghcr.io', username: 'bot2', password: 'ghp_new' });
    const list = await agent.get(`/projects/${project.id}/registries`);
    expect(list.body.data.map((r: { host: string; username: string }) => [r.host, r.username])).toEqual([
      ['ghcr.io', 'bot2'],
      ['npm.example.test:8443', 'ci'],
    ]);
    expect(list.text).not.toContain('s3cret');
    const stored = await t.deps.knex('project_registries').where({ project_id: project.id });
    expect(JSON.stringify(stored)).not.toContain('s3cret-registry-pass');
    expect((await agent.delete(`/projects/${project.id}/registries/ghcr.io`)).status).toBe(204);
    expect((await agent.delete(`/projects/${project.id}/registries/ghcr.io`)).status).toBe(404);
    expect((await agent.get(`/projects/${project.id}/registries`)).body.data).toHaveLength(1);
  });

  it('names bad fields, and refuses a developer (403) and another team (404)', async () => {
    const { team, project, agent } = await world();
    const bad = await agent.post(`/projects/${project.id}/registries`, {
      host: 'https://npm.example.test/x',
      username: 'a b',
      password: '',
    });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.error.fields).sort()).toEqual(['host', 'password', 'username']);
    const dev = await createUser(t);
    await addMember(t, team, dev, 'developer');
    const body = { host: 'ghcr.io', username: 'x', password: 'y' };
    expect((await (await sessionAgent(t, dev)).post(`/projects/${project.id}/registries`, body)).status).toBe(403);
    expect((await (await world()).agent.post(`/projects/${project.id}/registries`, body)).status).toBe(404);
    expect(await t.deps.knex('project_registries').where({ project_id: project.id })).toEqual([]);
  });
});

describe('/projects/{id}/terms', () => {
  it('shows the version in force, accepts it, and refuses another version', async () => {
    const { owner, project, agent } = await world();
    const before = await agent.get(`/projects/${project.id}/terms`);
    expect(before.body).toEqual({ version: expect.any(String), accepted: null });
    const wrong = await agent.post(`/projects/${project.id}/terms`, { version: '1999-01-01' });
    expect(wrong.status).toBe(422);
    expect(Object.keys(wrong.body.error.fields)).toEqual(['version']);
    const ok = await agent.post(`/projects/${project.id}/terms`, { version: before.body.version });
    expect(ok.status).toBe(200);
    expect(ok.body.accepted).toMatchObject({ version: before.body.version, by: { id: owner.id, name: owner.name } });
  });
});

describe('/projects/{id}/notifications', () => {
  it('gives every event a rule, saves the ones given, and refuses integrations of another team', async () => {
    const { team, project, agent } = await world();
    const hook = await agent.post(`/teams/${team.id}/integrations`, {
      kind: 'webhook',
      name: 'CI',
      events: ['task.failed'],
      url: 'https://example.test/h',
    });
    const rules = await agent.get(`/projects/${project.id}/notifications`);
    // one rule for each event of CONTRACT's list, and app.crashing (docs/api-guide.md)
    expect(rules.body.rules.map((r: { event: string }) => r.event).sort()).toEqual(
      [
        'app.crashing',
        'backup.failed',
        'backup.verify_failed',
        'domain.verified',
        'task.failed',
        'task.succeeded',
        'token.expiring',
      ].sort(),
    );
    expect(rules.body.rules.find((r: { event: string }) => r.event === 'task.failed')).toEqual({
      event: 'task.failed',
      email: 'none',
      integration_ids: [hook.body.id],
    });
    const saved = await agent.post(`/projects/${project.id}/notifications`, {
      rules: [{ event: 'task.failed', email: 'admins', integration_ids: [] }],
    });
    expect(saved.status).toBe(200);
    expect(saved.body.rules.find((r: { event: string }) => r.event === 'task.failed')).toEqual({
      event: 'task.failed',
      email: 'admins',
      integration_ids: [],
    });

    const other = await world();
    const foreign = await other.agent.post(`/teams/${other.team.id}/integrations`, {
      kind: 'webhook',
      name: 'X',
      events: ['task.failed'],
      url: 'https://example.test/x',
    });
    const refused = await agent.post(`/projects/${project.id}/notifications`, {
      rules: [
        { event: 'task.succeeded', email: 'members', integration_ids: [foreign.body.id] },
        { event: 'task.exploded', email: 'all', integration_ids: [] },
      ],
    });
    expect(refused.status).toBe(422);
    expect(Object.keys(refused.body.error.fields).sort()).toEqual(['rules.1.email', 'rules.1.event']);
    const refused2 = await agent.post(`/projects/${project.id}/notifications`, {
      rules: [{ event: 'task.succeeded', email: 'members', integration_ids: [foreign.body.id] }],
    });
    expect(refused2.body.error.fields).toEqual({ 'rules.0.integration_ids': 'must be integrations of this team' });
  });
});
