import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { useTestContext } from '../../helpers/context';
import {
  addMember,
  createAccessToken,
  createProject,
  createTeam,
  createUser,
  sessionAgent,
} from '../../helpers/fixtures';
import { Invitation } from '../../../db/models/invitation';
import { Team } from '../../../db/models/team';

const t = useTestContext();

describe('GET /teams', () => {
  it('lists the teams of a signed-in caller with their role', async () => {
    const user = await createUser(t);
    const a = await createTeam(t, user, 'Alpha');
    const other = await createUser(t);
    const b = await createTeam(t, other, 'Beta');
    await addMember(t, b, user, 'developer');
    await createTeam(t, other, 'Gamma');
    const res = await (await sessionAgent(t, user)).get('/teams');
    expect(res.status).toBe(200);
    expect(res.body.data.map((x: { id: string; name: string; role: string }) => [x.id, x.name, x.role])).toEqual([
      [a.id, 'Alpha', 'owner'],
      [b.id, 'Beta', 'developer'],
    ]);
    expect(res.body.data[0].created_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);
  });

  it('shows a token only its one team', async () => {
    const user = await createUser(t);
    await createTeam(t, user, 'One');
    const two = await createTeam(t, user, 'Two');
    const token = await createAccessToken(t, user, two);
    const res = await t.agent().withBearer(token).get('/teams');
    expect(res.status).toBe(200);
    expect(res.body.data.map((x: { id: string }) => x.id)).toEqual([two.id]);
  });

  it('answers 401 without a caller', async () => {
    expect((await t.agent().get('/teams')).status).toBe(401);
  });
});

describe('GET /teams/new', () => {
  it('says what creating a team asks for', async () => {
    const res = await (await sessionAgent(t, await createUser(t))).get('/teams/new');
    expect(res.status).toBe(200);
    expect(res.body.fields.name.max_length).toBe(100);
    expect(res.body.creator_role).toBe('owner');
    expect(res.body.roles.map((r: { name: string }) => r.name)).toEqual(['owner', 'admin', 'developer', 'viewer']);
  });

  it('refuses a token', async () => {
    const user = await createUser(t);
    const token = await createAccessToken(t, user, await createTeam(t, user));
    const res = await t.agent().withBearer(token).get('/teams/new');
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('token_not_allowed');
  });
});

describe('POST /teams', () => {
  it('creates a team whose creator is owner', async () => {
    const user = await createUser(t);
    const agent = await sessionAgent(t, user);
    const res = await agent.post('/teams', { name: '  Acme Corp ' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'Acme Corp', role: 'owner' });
    const people = await agent.get(`/teams/${res.body.id}/people`);
    expect(people.body.data).toEqual([expect.objectContaining({ user_id: user.id, role: 'owner' })]);
  });

  it('refuses a missing, empty or too long name and unknown fields, naming each', async () => {
    const agent = await sessionAgent(t, await createUser(t));
    const empty = await agent.post('/teams', { name: '   ', plan: 'gold' });
    expect(empty.status).toBe(422);
    expect(Object.keys(empty.body.error.fields).sort()).toEqual(['name', 'plan']);
    expect((await agent.post('/teams', { name: 'x'.repeat(101) })).body.error.fields.name).toBeDefined();
    expect((await agent.post('/teams', {})).body.error.fields.name).toBe('is required');
  });

  it('refuses a token with token_not_allowed', async () => {
    const user = await createUser(t);
    const token = await createAccessToken(t, user, await createTeam(t, user));
    const res = await t.agent().withBearer(token).post('/teams', { name: 'CI team' });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('token_not_allowed');
  });
});

describe('GET /teams/{id}/settings', () => {
  it('shows the settings to a member', async () => {
    const owner = await createUser(t);
    const team = await createTeam(t, owner, 'Settings Team');
    const viewer = await createUser(t);
    await addMember(t, team, viewer, 'viewer');
    const res = await (await sessionAgent(t, viewer)).get(`/teams/${team.id}/settings`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: team.id, name: 'Settings Team', role: 'viewer' });
  });

  it("answers 404 for another team's settings", async () => {
    const team = await createTeam(t, await createUser(t));
    const res = await (await sessionAgent(t, await createUser(t))).get(`/teams/${team.id}/settings`);
    expect(res.status).toBe(404);
    expect((await (await sessionAgent(t, await createUser(t))).get(`/teams/${randomUUID()}/settings`)).status).toBe(
      404,
    );
  });
});

describe('POST /teams/{id}/settings', () => {
  it('lets an admin rename the team', async () => {
    const team = await createTeam(t, await createUser(t), 'Old');
    const admin = await createUser(t);
    await addMember(t, team, admin, 'admin');
    const res = await (await sessionAgent(t, admin)).post(`/teams/${team.id}/settings`, { name: 'New' });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe('New');
    expect((await Team.query(t.deps.knex).findById(team.id))!.name).toBe('New');
  });

  it('refuses a developer with 403 and changes nothing', async () => {
    const team = await createTeam(t, await createUser(t), 'Keep');
    const dev = await createUser(t);
    await addMember(t, team, dev, 'developer');
    const res = await (await sessionAgent(t, dev)).post(`/teams/${team.id}/settings`, { name: 'Changed' });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('forbidden');
    expect((await Team.query(t.deps.knex).findById(team.id))!.name).toBe('Keep');
  });

  it('refuses an invalid name with 422', async () => {
    const owner = await createUser(t);
    const team = await createTeam(t, owner);
    const res = await (await sessionAgent(t, owner)).post(`/teams/${team.id}/settings`, { name: '' });
    expect(res.status).toBe(422);
    expect(res.body.error.fields.name).toBeDefined();
  });
});

describe('DELETE /teams/{id}', () => {
  it('deletes an empty team for its owner', async () => {
    const owner = await createUser(t);
    const team = await createTeam(t, owner);
    await createAccessToken(t, owner, team); // the owner's own token does not hold the team back
    const agent = await sessionAgent(t, owner);
    const res = await agent.delete(`/teams/${team.id}`);
    expect(res.status).toBe(204);
    expect(await Team.query(t.deps.knex).findById(team.id)).toBeUndefined();
    expect((await agent.get(`/teams/${team.id}/settings`)).status).toBe(404);
  });

  it('refuses with team_not_empty, naming what is left, and keeps the team', async () => {
    const owner = await createUser(t);
    const team = await createTeam(t, owner);
    await createProject(t, team, { name: 'web' });
    const member = await createUser(t);
    await addMember(t, team, member, 'developer');
    await createAccessToken(t, member, team);
    await Invitation.query(t.deps.knex).insert({
      team_id: team.id,
      email: 'pending@example.test',
      role: 'viewer',
      expires_at: new Date(Date.now() + 86_400_000),
    } as Partial<Invitation>);
    const res = await (await sessionAgent(t, owner)).delete(`/teams/${team.id}`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('team_not_empty');
    expect(res.body.error.message).toMatch(/1 project/);
    expect(res.body.error.message).toMatch(/1 other member/);
    expect(res.body.error.message).toMatch(/1 open invitation/);
    expect(res.body.error.message).toMatch(/1 active access token/);
    expect(res.body.error.left).toEqual({ projects: 1, members: 1, invitations: 1, tokens: 1 });
    expect(await Team.query(t.deps.knex).findById(team.id)).toBeDefined();
  });

  it('refuses while a former member still has an active token there', async () => {
    const owner = await createUser(t);
    const team = await createTeam(t, owner);
    const former = await createUser(t);
    const m = await addMember(t, team, former, 'developer');
    await createAccessToken(t, former, team);
    await t.deps.knex('memberships').where({ id: m.id }).delete();
    const res = await (await sessionAgent(t, owner)).delete(`/teams/${team.id}`);
    expect(res.status).toBe(409);
    expect(res.body.error.left.tokens).toBe(1);
  });

  it('refuses an admin with 403', async () => {
    const team = await createTeam(t, await createUser(t));
    const admin = await createUser(t);
    await addMember(t, team, admin, 'admin');
    const res = await (await sessionAgent(t, admin)).delete(`/teams/${team.id}`);
    expect(res.status).toBe(403);
    expect(await Team.query(t.deps.knex).findById(team.id)).toBeDefined();
  });

  it('answers 404 for another team', async () => {
    const team = await createTeam(t, await createUser(t));
    const res = await (await sessionAgent(t, await createUser(t))).delete(`/teams/${team.id}`);
    expect(res.status).toBe(404);
  });
});
