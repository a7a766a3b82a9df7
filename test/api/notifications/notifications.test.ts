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
import type { Team } from '../../../db/models/team';

const t = useTestContext();

/** A task row as the task platform writes it (the tasks' own flows are tested with the platform). */
async function task(team: Team, status: string, attrs: { type?: string; projectId?: string; finishedAt?: Date } = {}) {
  const id = randomUUID();
  const final = ['succeeded', 'failed', 'cancelled'].includes(status);
  await t.deps.knex('tasks').insert({
    id,
    team_id: team.id,
    project_id: attrs.projectId ?? null,
    kind: 'deployments',
    type: attrs.type ?? 'deploy',
    status,
    account_via: 'system',
    workflow_id: `test-${id}`,
    finished_at: final ? (attrs.finishedAt ?? new Date()) : null,
  });
  return id;
}

describe('GET /teams/{id}/notifications', () => {
  it('counts what is waiting and what finished since the caller last looked, with the first rows', async () => {
    const user = await createUser(t);
    const team = await createTeam(t, user);
    const project = await createProject(t, team, { name: 'shop' });
    const agent = await sessionAgent(t, user);
    const running = await task(team, 'running', { projectId: project.id });
    await task(team, 'pending');
    const old = await task(team, 'succeeded', { finishedAt: new Date(Date.now() - 60_000) });
    const res = await agent.get(`/teams/${team.id}/notifications`);
    expect(res.status).toBe(200);
    expect(res.body.waiting.count).toBe(2);
    expect(res.body.waiting.data.map((r: { task_id: string }) => r.task_id)).toContain(running);
    expect(res.body.waiting.data.find((r: { task_id: string }) => r.task_id === running).summary).toBe(
      'Deploy of shop running',
    );
    expect(res.body.finished).toMatchObject({
      count: 1,
      data: [expect.objectContaining({ task_id: old, status: 'succeeded' })],
    });
    expect(res.body.seen_at).toBeNull();

    expect((await agent.post(`/teams/${team.id}/activity/seen`)).status).toBe(204);
    const failed = await task(team, 'failed', { finishedAt: new Date(Date.now() + 1000) });
    const after = await agent.get(`/teams/${team.id}/notifications`);
    expect(after.body.finished).toMatchObject({
      count: 1,
      data: [expect.objectContaining({ task_id: failed, status: 'failed' })],
    });
    expect(after.body.seen_at).not.toBeNull();
  });

  it('answers 304 to its own ETag while nothing changed, 200 once something did', async () => {
    const user = await createUser(t);
    const team = await createTeam(t, user);
    const agent = await sessionAgent(t, user);
    await task(team, 'running');
    const first = await agent.get(`/teams/${team.id}/notifications`);
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"/);
    const again = await agent.get(`/teams/${team.id}/notifications`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    await task(team, 'pending');
    const changed = await agent.get(`/teams/${team.id}/notifications`, { headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.body.waiting.count).toBe(2);
  });

  it('keeps what was seen per user', async () => {
    const a = await createUser(t);
    const team = await createTeam(t, a);
    const b = await createUser(t);
    await addMember(t, team, b, 'viewer');
    await task(team, 'succeeded', { finishedAt: new Date(Date.now() - 60_000) });
    await (await sessionAgent(t, a)).post(`/teams/${team.id}/activity/seen`);
    expect((await (await sessionAgent(t, a)).get(`/teams/${team.id}/notifications`)).body.finished.count).toBe(0);
    expect((await (await sessionAgent(t, b)).get(`/teams/${team.id}/notifications`)).body.finished.count).toBe(1);
  });

  it("answers 404 for another team's bells and refuses a token", async () => {
    const team = await createTeam(t, await createUser(t));
    const stranger = await sessionAgent(t, await createUser(t));
    expect((await stranger.get(`/teams/${team.id}/notifications`)).status).toBe(404);
    expect((await stranger.post(`/teams/${team.id}/activity/seen`)).status).toBe(404);
    const owner = await createUser(t);
    const own = await createTeam(t, owner);
    const token = await createAccessToken(t, owner, own);
    expect((await t.agent().withBearer(token).get(`/teams/${own.id}/notifications`)).body.error.code).toBe(
      'token_not_allowed',
    );
  });
});

describe('GET /teams/{id}/settings next_steps and POST /teams/{id}/next-steps/hide', () => {
  it("derives the steps from the team's state and hides them per user", async () => {
    const user = await createUser(t);
    const team = await createTeam(t, user);
    const agent = await sessionAgent(t, user);
    const steps = async (a = agent) =>
      Object.fromEntries(
        (await a.get(`/teams/${team.id}/settings`)).body.next_steps.map((s: { id: string; done: boolean }) => [
          s.id,
          s.done,
        ]),
      );
    expect(await steps()).toEqual({
      connect_repository: false,
      first_deploy: false,
      add_domain: false,
      create_token: false,
      invite_teammate: false,
    });

    await createProject(t, team, { repository_url: 'https://git.example.test/acme/shop.git' });
    await task(team, 'succeeded');
    await createAccessToken(t, user, team);
    const mate = await createUser(t);
    await addMember(t, team, mate, 'developer');
    expect(await steps()).toEqual({
      connect_repository: true,
      first_deploy: true,
      add_domain: false,
      create_token: true,
      invite_teammate: true,
    });

    expect((await agent.post(`/teams/${team.id}/next-steps/hide`)).status).toBe(204);
    expect((await agent.get(`/teams/${team.id}/settings`)).body.next_steps).toBeNull();
    expect(Array.isArray((await (await sessionAgent(t, mate)).get(`/teams/${team.id}/settings`)).body.next_steps)).toBe(
      true,
    );
  });
});
