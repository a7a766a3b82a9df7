import { describe, expect, it } from 'vitest';
import { allRoutes } from '../../../api/routes';
import { Environment } from '../../../db/models/environment';
import { Membership } from '../../../db/models/membership';
import type { Team } from '../../../db/models/team';
import type { User } from '../../../db/models/user';
import { useTestContext } from '../../helpers/context';
import { addMember, createAccessToken, createProject, createTeam, createUser } from '../../helpers/fixtures';

/**
 * A token acts with its issuer's current role in its one team, on the spec's token-reachable routes.
 */
const t = useTestContext();
let port = 0;

async function createEnvironment(team: Team, projectId: string) {
  port += 1;
  return Environment.query(t.deps.knex).insertAndFetch({
    team_id: team.id,
    project_id: projectId,
    name: `env-${port}`,
    git_ref: 'main',
    auto_deploy: false,
    port: t.config.environmentPorts.from + 50 + port,
  });
}

/** A user in two teams, with a token for the first. */
async function twoTeams(role: 'owner' | 'developer' | 'viewer' = 'developer') {
  const owner = await createUser(t);
  const user = await createUser(t);
  const tokenTeam = await createTeam(t, owner);
  await addMember(t, tokenTeam, user, role);
  const otherTeam = await createTeam(t, user);
  const token = await createAccessToken(t, user, tokenTeam);
  return { user, tokenTeam, otherTeam, token, bearer: t.agent().withBearer(token) };
}

async function setRole(user: User, team: Team, role: 'developer' | 'viewer') {
  await Membership.query(t.deps.knex).where({ user_id: user.id, team_id: team.id }).patch({ role });
}

describe('token reach', () => {
  it('GET /me answers the issuer', async () => {
    const { user, bearer } = await twoTeams();
    const res = await bearer.get('/me');
    expect(res.status).toBe(200);
    expect(res.text).toContain(user.id);
  });

  it("GET /teams lists only the token's team, whatever else its issuer belongs to", async () => {
    const { tokenTeam, bearer } = await twoTeams();
    const res = await bearer.get('/teams');
    expect(res.status).toBe(200);
    expect(res.body.data.map((x: { id: string }) => x.id)).toEqual([tokenTeam.id]);
  });

  it("GET /projects lists only the projects of the token's team", async () => {
    const { tokenTeam, otherTeam, bearer } = await twoTeams();
    const mine = await createProject(t, tokenTeam);
    await createProject(t, otherTeam);
    const res = await bearer.get('/projects');
    expect(res.status).toBe(200);
    expect(res.body.data.map((x: { id: string }) => x.id)).toEqual([mine.id]);
  });

  it("GET /environments lists only the environments of the token's team", async () => {
    const { tokenTeam, otherTeam, bearer } = await twoTeams();
    const mine = await createEnvironment(tokenTeam, (await createProject(t, tokenTeam)).id);
    await createEnvironment(otherTeam, (await createProject(t, otherTeam)).id);
    const res = await bearer.get('/environments');
    expect(res.status).toBe(200);
    expect(res.body.data.map((x: { id: string }) => x.id)).toEqual([mine.id]);
  });

  it("GET /environments/{id} answers 404 for an environment of the issuer's other team", async () => {
    const { tokenTeam, otherTeam, bearer } = await twoTeams();
    const mine = await createEnvironment(tokenTeam, (await createProject(t, tokenTeam)).id);
    const theirs = await createEnvironment(otherTeam, (await createProject(t, otherTeam)).id);
    expect((await bearer.get(`/environments/${mine.id}`)).status).toBe(200);
    const res = await bearer.get(`/environments/${theirs.id}`);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });

  it("POST /environments/{id}/deploy follows the issuer's current role: viewer 403, developer allowed, viewer again 403", async () => {
    const { user, tokenTeam, bearer } = await twoTeams('viewer');
    const env = await createEnvironment(tokenTeam, (await createProject(t, tokenTeam)).id);
    const asViewer = await bearer.post(`/environments/${env.id}/deploy`, {});
    expect(asViewer.status).toBe(403);
    expect(asViewer.body.error.code).toBe('forbidden');

    await setRole(user, tokenTeam, 'developer');
    // The project has no repository: past the role check the deploy is refused for that (409), not for the role.
    const asDeveloper = await bearer.post(`/environments/${env.id}/deploy`, {});
    expect(asDeveloper.status, JSON.stringify(asDeveloper.body)).not.toBe(403);
    expect(asDeveloper.status).not.toBe(404);
    expect(asDeveloper.status).toBeLessThan(500);

    await setRole(user, tokenTeam, 'viewer');
    const demoted = await bearer.post(`/environments/${env.id}/deploy`, {});
    expect(demoted.status).toBe(403);
    expect(demoted.body.error.code).toBe('forbidden');
  });

  it('answers 403 forbidden everywhere once its issuer has left the team', async () => {
    const { user, tokenTeam, bearer } = await twoTeams('developer');
    const before = await bearer.get('/me/tokens');
    expect(before.body.error.code).toBe('token_not_allowed'); // the token works until then

    await Membership.query(t.deps.knex).where({ user_id: user.id, team_id: tokenTeam.id }).delete();
    const paths = new Set(['/me', '/teams', '/projects', '/environments', '/tasks', '/me/tokens', '/no/such/route']);
    const calls: Array<[string, string]> = [...paths].map((p) => ['get', p]);
    for (const r of allRoutes().filter((x) => x.auth === 'token')) {
      calls.push([r.method, r.path.replace(/\{[^}]+\}/g, () => crypto.randomUUID())]);
    }
    calls.push(['post', `/environments/${crypto.randomUUID()}/deploy`], ['post', '/me/tokens']);
    for (const [method, path] of calls) {
      const res = await bearer.request(method.toUpperCase(), path, method === 'get' ? {} : { body: {} });
      expect({ method, path, status: res.status, code: res.body?.error?.code }).toEqual({
        method,
        path,
        status: 403,
        code: 'forbidden',
      });
    }
  });
});
