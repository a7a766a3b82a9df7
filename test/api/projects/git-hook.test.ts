import { createHmac } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createDeployWorld, fetchEnvironment, waitForTask } from '../../helpers/deploy-fixtures';
import { sessionAgent } from '../../helpers/fixtures';
import type { Agent } from '../../helpers/http';

/** No poller here (AUTO_DEPLOY_POLL_SECONDS=0): every deploy below was started by the signed hook itself. */
const t = useTestContext({ worker: true, env: { AUTO_DEPLOY_POLL_SECONDS: '0' } });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let owner: Agent;
let secret: string;

const sign = (body: string, key = secret) => `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
const hook = (body: string, signature?: string, projectId = w.project.id) =>
  t.agent().request('POST', `/hooks/git/${projectId}`, {
    rawBody: body,
    headers: { 'content-type': 'application/json', ...(signature ? { 'x-hub-signature-256': signature } : {}) },
  });
const PUSH = JSON.stringify({ ref: 'refs/heads/main', after: 'x'.repeat(40), repository: { name: 'app' } });
const taskCount = async () =>
  Number((await t.deps.knex('tasks').where({ environment_id: w.environment.id }).count({ n: '*' }))[0].n);

beforeAll(async () => {
  w = await createDeployWorld(t);
  writeFileSync(w.repo.gate, '');
  owner = await sessionAgent(t, w.owner);
  const res = await owner.post(`/projects/${w.project.id}/repository`, { url: w.repo.dir });
  expect(res.status, res.text).toBe(200);
  secret = res.body.webhook_secret;
});

describe('POST /projects/{id}/repository', () => {
  it('answers the repository with a new webhook secret, shown there only and kept sealed', async () => {
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{32}$/);
    const row = await t.deps.knex('projects').where({ id: w.project.id }).first();
    expect(row.webhook_secret).not.toContain(secret);
    const got = await owner.get(`/projects/${w.project.id}/repository`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({
      url: w.repo.dir,
      default_branch: 'main',
      reachable: true,
      checked_at: expect.any(String),
      webhook_url: `${t.baseUrl}/api/vc/v1/hooks/git/${w.project.id}`,
    });
    expect(got.text).not.toContain(secret);
  });
});

describe('POST /hooks/git/{project_id}', () => {
  it('refuses a request without a signature (401) or with a wrong one (403), starting nothing', async () => {
    const none = await hook(PUSH);
    expect({ status: none.status, code: none.body.error?.code }).toEqual({ status: 401, code: 'unauthenticated' });
    const wrongKey = await hook(PUSH, sign(PUSH, 'whsec_not-the-secret'));
    expect({ status: wrongKey.status, code: wrongKey.body.error?.code }).toEqual({ status: 403, code: 'forbidden' });
    const otherBody = await hook(PUSH, sign(`${PUSH} `));
    expect(otherBody.status).toBe(403);
    const otherProject = await hook(PUSH, sign(PUSH), crypto.randomUUID());
    expect(otherProject.status).toBe(403);
    expect(await taskCount()).toBe(0);
  });

  it('starts nothing for an environment whose auto_deploy is off', async () => {
    const res = await hook(PUSH, sign(PUSH));
    expect(res.status, res.text).toBe(202);
    expect(res.body).toEqual({ data: [] });
    expect(await taskCount()).toBe(0);
  });

  it('deploys at once, signed: an ordinary deploy task whose account is via auto_deploy', async () => {
    const patched = await owner.patch(`/environments/${w.environment.id}`, { auto_deploy: true });
    expect(patched.status, patched.text).toBe(200);
    const head = w.repo.commit('v2');
    const res = await hook(PUSH, sign(PUSH));
    expect(res.status, res.text).toBe(202);
    expect(res.body.data).toEqual([
      { environment_id: w.environment.id, status: 'started', commit: head, task_id: expect.any(String) },
    ]);
    const task = await waitForTask(t, w.api, res.body.data[0].task_id);
    expect(task.status, task.error ?? '').toBe('succeeded');
    expect(task).toMatchObject({ type: 'deploy', kind: 'deployments', account: { id: null, via: 'auto_deploy' } });
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v2' });
  });

  it('answers up_to_date, starting nothing, when the ref has not moved', async () => {
    const before = await taskCount();
    const res = await hook('{}', sign('{}'));
    expect(res.status).toBe(202);
    expect(res.body.data).toEqual([
      { environment_id: w.environment.id, status: 'up_to_date', commit: expect.any(String), task_id: null },
    ]);
    expect(await taskCount()).toBe(before);
  });

  it('refuses a body that is not a JSON object with 422 once the signature holds', async () => {
    const res = await hook('[1]', sign('[1]'));
    expect(res.status).toBe(422);
  });
});

describe('POST /projects/{id}/repository/reconnect', () => {
  it('checks access again: reachable false while git cannot read it, true again after', async () => {
    const moved = `${w.repo.dir}-moved`;
    renameSync(w.repo.dir, moved);
    try {
      const gone = await owner.post(`/projects/${w.project.id}/repository/reconnect`);
      expect(gone.status, gone.text).toBe(200);
      expect(gone.body).toMatchObject({ url: w.repo.dir, reachable: false, reason: expect.any(String) });
      expect((await owner.get(`/projects/${w.project.id}/repository`)).body.reachable).toBe(false);
    } finally {
      renameSync(moved, w.repo.dir);
    }
    const back = await owner.post(`/projects/${w.project.id}/repository/reconnect`);
    expect(back.status).toBe(200);
    expect(back.body).toMatchObject({ reachable: true, default_branch: 'main', checked_at: expect.any(String) });
    expect(back.body.webhook_secret).toBeUndefined();
  });

  it('is refused to a developer (403) and answers 409 no_repository without a repository', async () => {
    const dev = await w.api.post(`/projects/${w.project.id}/repository/reconnect`);
    expect(dev.status).toBe(403);
    const bare = await owner.post('/projects', { team_id: w.team.id, name: 'bare' });
    const res = await owner.post(`/projects/${bare.body.id}/repository/reconnect`);
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 409, code: 'no_repository' });
  });
});
