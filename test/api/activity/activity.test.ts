import { beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { createEnvironment } from '../../helpers/deploy-fixtures';
import type { Agent } from '../../helpers/http';
import { insertTask } from '../../../db/queries/tasks';

const t = useTestContext();
let owner: Agent;
let outsider: Agent;
let teamId: string;
let envId: string;
let projectId: string;

beforeAll(async () => {
  const user = await createUser(t);
  const team = await createTeam(t, user);
  teamId = team.id;
  owner = await sessionAgent(t, user);
  outsider = await sessionAgent(t, await createUser(t));
  const project = await createProject(t, team);
  projectId = project.id;
  envId = (await createEnvironment(t, project, { name: 'staging' })).id;
  // A task of the team (tasks are events of their own).
  await insertTask(t.deps.knex, {
    id: '11111111-1111-4111-8111-111111111111',
    team_id: teamId,
    project_id: projectId,
    environment_id: envId,
    kind: 'backups',
    type: 'backup',
    account_user_id: user.id,
    account_via: 'session',
    workflow_id: 'backup-x',
    params: {},
    created_at: new Date(Date.now() - 60_000).toISOString(),
  });
  // Non-task changes through the API: a token issued and revoked, an invitation.
  const token = await owner.post('/me/tokens', { purpose: 'ci', team_id: teamId, expires_in_days: 7 });
  expect(token.status).toBe(201);
  expect((await owner.delete(`/me/tokens/${token.body.id}`)).status).toBe(200);
  expect((await owner.post(`/teams/${teamId}/invitations`, { email: 'new@example.test', role: 'viewer' })).status).toBe(
    201,
  );
});

describe('GET /teams/{id}/activity', () => {
  it('lists tasks and changes newest first, with who did them', async () => {
    const res = await owner.get(`/teams/${teamId}/activity`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((e: { type: string }) => e.type)).toEqual([
      'invitation_sent',
      'token_revoked',
      'token_issued',
      'backup',
    ]);
    expect(res.body.data[1]).toMatchObject({
      kind: 'access',
      actor: { via: 'session', name: expect.any(String) },
      summary: 'Token "ci" revoked',
    });
    expect(res.body.data[3]).toMatchObject({
      kind: 'backups',
      task_id: '11111111-1111-4111-8111-111111111111',
      environment_id: envId,
    });
    expect(res.body.next_before).toBeNull();
  });

  it('filters by kind, type and environment', async () => {
    expect((await owner.get(`/teams/${teamId}/activity?kind=access`)).body.data).toHaveLength(3);
    expect((await owner.get(`/teams/${teamId}/activity?type=token_issued`)).body.data).toHaveLength(1);
    expect(
      (await owner.get(`/teams/${teamId}/activity?environment=${envId}`)).body.data.map(
        (e: { type: string }) => e.type,
      ),
    ).toEqual(['backup']);
    expect((await owner.get(`/teams/${teamId}/activity?project=${projectId}&kind=access`)).body.data).toEqual([]);
  });

  it('pages with limit and before, without gaps or repeats', async () => {
    const first = await owner.get(`/teams/${teamId}/activity?limit=3`);
    expect(first.body.data).toHaveLength(3);
    const second = await owner.get(`/teams/${teamId}/activity?limit=3&before=${first.body.next_before}`);
    expect(second.body.data.map((e: { type: string }) => e.type)).toEqual(['backup']);
    expect(second.body.next_before).toBeNull();
  });

  it('refuses a bad filter with 422 naming it, and another team with 404', async () => {
    const res = await owner.get(`/teams/${teamId}/activity?kind=nope&colour=red`);
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['colour', 'kind']);
    expect((await outsider.get(`/teams/${teamId}/activity`)).status).toBe(404);
  });
});
