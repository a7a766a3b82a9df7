import { createHmac } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createDeployWorld, fetchEnvironment, waitForTask } from '../../helpers/deploy-fixtures';
import { sessionAgent } from '../../helpers/fixtures';
import { openSubscription } from '../../../db/queries/subscriptions';
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

describe('cancelling a project, then deleting it', () => {
  let order: string;
  const url = () => `/projects/${w.project.id}/cancel`;

  beforeAll(async () => {
    const sub = await openSubscription(t.deps.knex, {
      teamId: w.team.id,
      projectId: w.project.id,
      environmentId: w.environment.id,
      kind: 'server',
      item: 'Web server, plan small (production)',
      monthlyPrice: 12,
      currency: 'EUR',
    });
    order = sub.order;
  });

  it('GET /projects/{id}/cancel says what ends: its subscriptions and its environments', async () => {
    const res = await owner.get(url());
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      project_id: w.project.id,
      cancelled_at: null,
      data_kept_days: 30,
      data_deleted_after: null,
      subscriptions: [{ order, kind: 'server', monthly_price: '12.00', currency: 'EUR' }],
      environments: [{ id: w.environment.id, name: 'production', stopped: false }],
    });
    expect((await w.api.get(url())).status).toBe(403);
  });

  it('POST without confirm true is refused on confirm, and nothing changes', async () => {
    for (const body of [{}, { confirm: false }, { confirm: 'yes' }]) {
      const res = await owner.post(url(), body);
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.fields)).toEqual(['confirm']);
    }
    expect((await t.deps.knex('subscriptions').where({ order }).first()).status).toBe('active');
    expect((await t.deps.knex('projects').where({ id: w.project.id }).first()).cancelled_at).toBeNull();
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v2' });
  });

  it('DELETE /projects/{id} answers 409 project_not_empty while it has environments', async () => {
    const res = await owner.delete(`/projects/${w.project.id}`);
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 409, code: 'project_not_empty' });
  });

  it('POST {confirm: true} ends the subscriptions and stops the environments (the edge answers 503 stopped)', async () => {
    // Every change of the edge's route, row by row: it must go from the web process straight to "stopped",
    // never through no route at all (the edge answers that "no release is live").
    await t.deps.knex.raw(`
      CREATE TABLE test_route_history (seq serial PRIMARY KEY, op text NOT NULL, environment_id uuid, unavailable text);
      CREATE FUNCTION test_route_history() RETURNS trigger AS $$
      BEGIN
        IF TG_OP = 'DELETE' THEN
          INSERT INTO test_route_history (op, environment_id, unavailable) VALUES (TG_OP, OLD.environment_id, NULL);
        ELSE
          INSERT INTO test_route_history (op, environment_id, unavailable) VALUES (TG_OP, NEW.environment_id, NEW.unavailable);
        END IF;
        RETURN NULL;
      END $$ LANGUAGE plpgsql;
      CREATE TRIGGER test_route_history AFTER INSERT OR UPDATE OR DELETE ON edge_routes
        FOR EACH ROW EXECUTE FUNCTION test_route_history();`);
    const res = await owner.post(url(), { confirm: true });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      cancelled_at: expect.any(String),
      data_deleted_after: expect.any(String),
      subscriptions: [],
      environments: [{ id: w.environment.id, stopped: true }],
    });
    const days = (Date.parse(res.body.data_deleted_after) - Date.parse(res.body.cancelled_at)) / 86_400_000;
    expect(days).toBe(30);
    const sub = await t.deps.knex('subscriptions').where({ order }).first();
    expect({ status: sub.status, ended: Boolean(sub.ended_at), by: sub.cancelled_by }).toEqual({
      status: 'ended',
      ended: true,
      by: w.owner.id,
    });
    const deadline = Date.now() + 30_000;
    let seen = await fetchEnvironment(w.environment.port);
    // (for a moment HAProxy may answer its own 503, the web process gone before "stopped" is served)
    while (seen.text !== 'stopped' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      seen = await fetchEnvironment(w.environment.port);
    }
    expect(seen).toEqual({ status: 503, text: 'stopped' });
    const history = await t.deps
      .knex('test_route_history')
      .where({ environment_id: w.environment.id })
      .orderBy('seq')
      .select('op', 'unavailable');
    expect(history.length).toBeGreaterThan(0);
    expect(history.filter((h: { op: string }) => h.op === 'DELETE')).toEqual([]);
    expect(history.at(-1)).toEqual({ op: 'UPDATE', unavailable: 'stopped' });
    // Data kept: the environment, its releases and its tasks are still there.
    expect(await t.deps.knex('environments').where({ id: w.environment.id }).first()).toBeTruthy();
    expect(await t.deps.knex('releases').where({ environment_id: w.environment.id }).first()).toBeTruthy();
  });

  it('after it, nothing deploys there: the hook starts nothing, a deploy, cancelling again, a new environment: 409', async () => {
    w.repo.commit('v3');
    const hooked = await hook(PUSH, sign(PUSH));
    expect(hooked.status).toBe(202);
    expect(hooked.body.data).toEqual([]);
    const deploy = await w.api.post(`/environments/${w.environment.id}/deploy`);
    expect(deploy.status).toBe(409);
    expect((await owner.post(url(), { confirm: true })).status).toBe(409);
    const env = await owner.post(`/projects/${w.project.id}/environments`, { name: 'staging', git_ref: 'main' });
    expect({ status: env.status, code: env.body.error?.code }).toEqual({ status: 409, code: 'conflict' });
  });

  it('the daily prune deletes the environments 30 days later; then DELETE /projects/{id} answers 204', async () => {
    const run = (days: number) =>
      t.deps.temporal.workflow.execute('pruneExpiredRecords', {
        taskQueue: t.config.taskQueue,
        workflowId: `prune-${crypto.randomUUID()}`,
        args: [{ asOf: new Date(Date.now() + days * 86_400_000).toISOString() }],
      }) as Promise<{ cancelledEnvironments: number }>;
    expect((await run(29)).cancelledEnvironments).toBe(0);
    expect(await t.deps.knex('environments').where({ id: w.environment.id }).first()).toBeTruthy();
    expect((await run(31)).cancelledEnvironments).toBe(1);
    expect(await t.deps.knex('environments').where({ id: w.environment.id }).first()).toBeUndefined();
    // (the prune of 31 days ahead also ended the sessions of this file: sign in again)
    const again = await sessionAgent(t, w.owner);
    const res = await again.delete(`/projects/${w.project.id}`);
    expect(res.status, res.text).toBe(204);
    expect(await t.deps.knex('projects').where({ id: w.project.id }).first()).toBeUndefined();
  });
});
