import { rmSync, writeFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createDeployWorld, createEnvironment, fetchEnvironment, waitForTask } from '../../helpers/deploy-fixtures';
import { createAccessToken, createProject, createTeam, createUser } from '../../helpers/fixtures';

const t = useTestContext({ worker: true });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
const url = () => `/environments/${w.environment.id}`;
const countTasks = async () =>
  Number((await t.deps.knex('tasks').where({ environment_id: w.environment.id }).count({ n: '*' }))[0].n);

beforeAll(async () => {
  w = await createDeployWorld(t, { gatedFirstCommit: true });
});

describe('POST /environments/{id}/deploy refusals', () => {
  it("answers a viewer's token with 403 forbidden and starts nothing", async () => {
    for (const action of ['deploy', 'redeploy', 'rollback', 'build']) {
      const res = await w.viewerApi.post(`${url()}/${action}`);
      expect(res.status, action).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    }
    expect(await countTasks()).toBe(0);
  });

  it('answers 404 for an environment of another team', async () => {
    const other = await createUser(t);
    const team = await createTeam(t, other);
    const api = t.agent().withBearer(await createAccessToken(t, other, team));
    const res = await api.post(`${url()}/deploy`);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });

  it('refuses with 409 no_repository when the project has no repository', async () => {
    const project = await createProject(t, w.team);
    const env = await createEnvironment(t, project);
    const res = await w.api.post(`/environments/${env.id}/deploy`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('no_repository');
  });

  it('refuses a redeploy with nothing live and a rollback with no earlier release', async () => {
    const redeploy = await w.api.post(`${url()}/redeploy`);
    expect(redeploy.status).toBe(409);
    expect(redeploy.body.error.code).toBe('nothing_to_redeploy');
    const rollback = await w.api.post(`${url()}/rollback`);
    expect(rollback.status).toBe(409);
    expect(rollback.body.error.code).toBe('nothing_to_roll_back');
  });

  it('refuses unknown body fields with 422 naming them', async () => {
    const res = await w.api.post(`${url()}/deploy`, { skip_steps: true, force: 1 });
    expect(res.status).toBe(422);
    expect(res.body.error.fields).toEqual({ force: 'unknown field' });
  });

  it('refuses a deploy, redeploy or rollback while another runs, naming the running task, and queues nothing', async () => {
    rmSync(w.repo.gate, { force: true });
    const first = await w.api.post(`${url()}/deploy`);
    expect(first.status).toBe(202);
    await waitForTask(t, w.api, first.body.id, { until: (x) => x.status === 'running' });
    for (const action of ['deploy', 'redeploy', 'rollback']) {
      const res = await w.api.post(`${url()}/${action}`);
      expect(res.status, action).toBe(409);
      expect(res.body.error).toMatchObject({ code: 'deploy_in_progress', task_id: first.body.id });
    }
    writeFileSync(w.repo.gate, '');
    const done = await waitForTask(t, w.api, first.body.id);
    expect(done.status, done.error ?? '').toBe('succeeded');
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v1' });
    expect(await countTasks()).toBe(1);
  });

  it('accepts exactly one of 50 simultaneous deploys of one environment', async () => {
    w.repo.commit('v2');
    const answers = await Promise.all(Array.from({ length: 50 }, () => w.api.post(`${url()}/deploy`)));
    const accepted = answers.filter((r) => r.status === 202);
    expect(accepted).toHaveLength(1);
    const refused = answers.filter((r) => r.status === 409);
    expect(refused).toHaveLength(49);
    const running = accepted[0].body.id;
    // every refusal names the one task that runs (or, once it ended, nothing else started)
    for (const r of refused) expect(r.body.error).toMatchObject({ code: 'deploy_in_progress', task_id: running });
    const done = await waitForTask(t, w.api, running);
    expect(done.status, done.error ?? '').toBe('succeeded');
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v2' });
    expect(await countTasks()).toBe(2);
  });
});
