import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startTask } from '../../../core/tasks';
import { useTestContext } from '../../helpers/context';
import { createDeployWorld, waitForTask } from '../../helpers/deploy-fixtures';
import { sessionAgent } from '../../helpers/fixtures';

const t = useTestContext({ worker: true, edge: false, env: { RATE_LIMIT_PER_MINUTE: '100000' } });
const count = async (q: { count(c: Record<string, string>): Promise<Array<{ n: unknown }>> }) =>
  Number((await q.count({ n: '*' }))[0].n);

describe('Idempotency-Key on a task-starting POST', () => {
  it('answers the same task (200, Idempotent-Replayed) to the same key and body: a retried CI request deploys once', async () => {
    const w = await createDeployWorld(t);
    const key = `ci-run-${randomUUID()}`;
    const first = await w.api.post(
      `/environments/${w.environment.id}/build`,
      {},
      { headers: { 'idempotency-key': key } },
    );
    expect(first.status).toBe(202);
    const again = await w.api.post(
      `/environments/${w.environment.id}/build`,
      {},
      { headers: { 'idempotency-key': key } },
    );
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    expect(await count(t.deps.knex('tasks').where({ environment_id: w.environment.id, type: 'build' }))).toBe(1);
    await waitForTask(t, w.api, first.body.id);
  });

  it('starts one task for two identical requests sent at once', async () => {
    const w = await createDeployWorld(t);
    const key = randomUUID();
    const [a, b] = await Promise.all(
      [1, 2].map(() =>
        w.api.post(`/environments/${w.environment.id}/build`, {}, { headers: { 'idempotency-key': key } }),
      ),
    );
    expect([a.status, b.status].sort()).toEqual([200, 202]);
    expect(a.body.id).toBe(b.body.id);
    expect(await count(t.deps.knex('tasks').where({ environment_id: w.environment.id }))).toBe(1);
    await waitForTask(t, w.api, a.body.id);
  });

  it('refuses the same key with another request with 422 on Idempotency-Key, starting nothing', async () => {
    const w = await createDeployWorld(t);
    const key = randomUUID();
    const first = await w.api.post(
      `/environments/${w.environment.id}/deploy`,
      { skip_steps: false },
      { headers: { 'idempotency-key': key } },
    );
    expect(first.status).toBe(202);
    await waitForTask(t, w.api, first.body.id);
    const other = await w.api.post(
      `/environments/${w.environment.id}/deploy`,
      { skip_steps: true },
      { headers: { 'idempotency-key': key } },
    );
    expect(other.status).toBe(422);
    expect(Object.keys(other.body.error.fields)).toEqual(['Idempotency-Key']);
    expect(await count(t.deps.knex('tasks').where({ environment_id: w.environment.id }))).toBe(1);
  });

  it('gives the key back when the request is refused (a later request with it starts the task)', async () => {
    const w = await createDeployWorld(t);
    const key = randomUUID();
    const refused = await w.viewerApi.post(
      `/environments/${w.environment.id}/build`,
      {},
      { headers: { 'idempotency-key': key } },
    );
    expect(refused.status).toBe(403);
    expect(await count(t.deps.knex('idempotency_keys').where({ key }))).toBe(0);
    const ok = await w.api.post(`/environments/${w.environment.id}/build`, {}, { headers: { 'idempotency-key': key } });
    expect(ok.status).toBe(202);
    await waitForTask(t, w.api, ok.body.id);
  });

  it('refuses a key that is not 1-255 visible characters', async () => {
    const w = await createDeployWorld(t);
    const res = await w.api.post(
      `/environments/${w.environment.id}/build`,
      {},
      { headers: { 'idempotency-key': 'x'.repeat(256) } },
    );
    expect(res.status).toBe(422);
    expect(res.body.error.fields['Idempotency-Key']).toMatch(/255/);
  });
});

describe('one change at a time per environment', () => {
  it('refuses a deploy while another kind of exclusive task is open, with 409 task_in_progress naming it', async () => {
    const w = await createDeployWorld(t);
    // A restore (exclusive, kind backups) whose workflow is open: started through the task client itself.
    const restore = await startTask(
      t.deps,
      { via: 'system', userId: null },
      {
        type: 'restore',
        teamId: w.team.id,
        projectId: w.project.id,
        environmentId: w.environment.id,
        params: { backup_id: randomUUID() },
        summary: 'test restore',
      },
    );
    try {
      const res = await w.api.post(`/environments/${w.environment.id}/deploy`);
      expect(res.status).toBe(409);
      expect(res.body.error).toMatchObject({ code: 'task_in_progress', task_id: restore.id });
      const desc = await t.deps.temporal.workflow.getHandle(restore.workflow_id).describe();
      expect(desc.searchAttributes).toMatchObject({
        TaskType: ['restore'],
        TaskKind: ['backups'],
        TaskId: [restore.id],
        EnvironmentId: [w.environment.id],
      });
    } finally {
      await t.deps.temporal.workflow.getHandle(restore.workflow_id).terminate('test over');
    }
  });

  it('does not refuse a build (not exclusive) while a deploy runs', async () => {
    const w = await createDeployWorld(t, { gatedFirstCommit: true });
    const deploy = await w.api.post(`/environments/${w.environment.id}/deploy`);
    expect(deploy.status).toBe(202);
    const build = await w.api.post(`/environments/${w.environment.id}/build`);
    expect(build.status).toBe(202);
    const again = await w.api.post(`/environments/${w.environment.id}/redeploy`);
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'deploy_in_progress', task_id: deploy.body.id });
    const owner = await sessionAgent(t, w.owner);
    await owner.post(`/tasks/${build.body.id}/cancel`);
    (await import('node:fs')).writeFileSync(w.repo.gate, '');
    await waitForTask(t, w.api, deploy.body.id);
  });
});

describe('GET /metrics', () => {
  it('answers loopback clients in the Prometheus text format: request latency by route, refusals, tasks, workflow starts', async () => {
    const w = await createDeployWorld(t);
    await w.api.get('/tasks?nope=1');
    const task = await w.api.post(`/environments/${w.environment.id}/build`);
    await waitForTask(t, w.api, task.body.id);
    const res = await fetch(`${t.baseUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/plain/);
    const text = await res.text();
    expect(text).toMatch(
      /vc_http_request_duration_seconds_count\{method="GET",route="\/api\/vc\/v1\/tasks",status="422"\} [1-9]/,
    );
    expect(text).toMatch(/vc_http_refusals_total\{code="invalid",status="422"\} [1-9]/);
    expect(text).toMatch(/vc_tasks\{kind="deployments",type="build",status="succeeded"\} [1-9]/);
    expect(text).toMatch(/vc_workflow_start_duration_seconds_count\{type="build"\} [1-9]/);
  });
});
