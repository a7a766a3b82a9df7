import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import { EtagReader } from '../../console/src/lib/etag-poll';

/** The bell's reader against the real GET /teams/{id}/notifications: unchanged counts cost a 304. */
const t = useTestContext();

describe('EtagReader (the notifications bell)', () => {
  it('sends the last ETag, keeps the last answer on 304, and reads again once something changed', async () => {
    const owner = await createUser(t);
    const team = await createTeam(t, owner);
    const project = await createProject(t, team);
    const agent = await sessionAgent(t, owner);
    const statuses: number[] = [];
    const reader = new EtagReader<{ waiting: { count: number } }>(`${t.apiUrl}/teams/${team.id}/notifications`, {
      headers: { cookie: `vc_session=${agent.cookies.get('vc_session')}` },
      fetch: async (url, init) => {
        const res = await fetch(url, init);
        statuses.push(res.status);
        return res;
      },
    });
    const first = await reader.read();
    expect(first.changed).toBe(true);
    expect(first.data.waiting.count).toBe(0);
    const second = await reader.read();
    expect(second).toEqual({ data: first.data, changed: false });
    expect(statuses).toEqual([200, 304]);

    await t.deps.knex('tasks').insert({
      team_id: team.id,
      project_id: project.id,
      kind: 'deployments',
      type: 'deploy',
      status: 'running',
      account_user_id: owner.id,
      account_via: 'session',
      workflow_id: `etag-reader-${Date.now()}`,
    });
    const third = await reader.read();
    expect(third.changed).toBe(true);
    expect(third.data.waiting.count).toBe(1);
    expect(statuses).toEqual([200, 304, 200]);
  });
});
