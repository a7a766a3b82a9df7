import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createEnvironment, waitForTask } from '../../helpers/deploy-fixtures';
import { createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';

/**
 * Every paid thing opens a subscription (CONTRACT "Teams: billing"): a server moved to a plan, a service
 * when it is created; GET /teams/{id}/billing shows them and their monthly total.
 */
const t = useTestContext({ worker: true, edge: false });

async function world() {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  const project = await createProject(t, team);
  const environment = await createEnvironment(t, project, { name: 'production' });
  const [server] = await t.deps
    .knex('servers')
    .insert({
      team_id: team.id,
      project_id: project.id,
      environment_id: environment.id,
      role: 'web',
      name: 'production-web',
      plan: 'small',
      cpu: 0.5,
      memory_mb: 512,
      disk_gb: 10,
    })
    .returning('id');
  return { team, project, environment, server, agent: await sessionAgent(t, owner) };
}

type Agent = Awaited<ReturnType<typeof world>>['agent'];

async function run(agent: Agent, path: string, body: unknown) {
  const res = await agent.post(path, body);
  expect(res.status, res.text).toBe(202);
  return waitForTask(t, agent, res.body.id, { timeoutMs: 90_000 });
}

describe('a server moved to another plan', () => {
  it('is paid at the new plan from then on: the earlier subscription ends, one new one runs', async () => {
    const { team, project, server, agent } = await world();
    expect((await agent.get(`/teams/${team.id}/billing`)).body).toMatchObject({ monthly_total: 0, subscriptions: [] });

    expect((await run(agent, `/servers/${server.id}/resize`, { plan: 'medium' })).status).toBe('succeeded');
    const first = await agent.get(`/teams/${team.id}/billing`);
    expect(first.body.monthly_total).toBe(16);
    expect(first.body.subscriptions).toEqual([
      expect.objectContaining({
        kind: 'server',
        item: `Web server, plan medium (production of ${project.name})`,
        monthly_price: 16,
        status: 'active',
        ends_at: null,
      }),
    ]);

    expect((await run(agent, `/servers/${server.id}/resize`, { plan: 'large' })).status).toBe('succeeded');
    const second = await agent.get(`/teams/${team.id}/billing`);
    expect(second.body.monthly_total).toBe(32);
    const byStatus = Object.fromEntries(
      second.body.subscriptions.map((s: { status: string; monthly_price: number }) => [s.status, s.monthly_price]),
    );
    expect(byStatus).toEqual({ ended: 16, active: 32 });
    expect(second.body.subscriptions.map((s: { order: string }) => s.order)).toContain(
      first.body.subscriptions[0].order,
    );
  });

  it('ends with its environment', async () => {
    const { team, environment, server, agent } = await world();
    expect((await run(agent, `/servers/${server.id}/resize`, { plan: 'medium' })).status).toBe('succeeded');
    expect((await agent.delete(`/environments/${environment.id}`)).status).toBe(204);
    const billing = await agent.get(`/teams/${team.id}/billing`);
    expect(billing.body.monthly_total).toBe(0);
    expect(billing.body.subscriptions.map((s: { status: string }) => s.status)).toEqual(['ended']);
  });
});

describe('a service', () => {
  it('opens its subscription when it is created', async () => {
    const { team, project, environment, agent } = await world();
    const task = await run(agent, `/environments/${environment.id}/services`, { kind: 'postgresql', plan: 'small' });
    expect(task.status, task.error ?? '').toBe('succeeded');
    const billing = await agent.get(`/teams/${team.id}/billing`);
    expect(billing.body.monthly_total).toBe(8);
    const service = (await agent.get(`/environments/${environment.id}/services`)).body.data[0];
    const [sub] = billing.body.subscriptions;
    expect(sub).toMatchObject({
      kind: 'service',
      item: expect.stringMatching(
        new RegExp(`^PostgreSQL \\d+ service, plan small \\(production of ${project.name}\\)$`),
      ),
      monthly_price: 8,
      status: 'active',
      environment_id: environment.id,
    });
    const row = await t.deps.knex('subscriptions').where({ order: sub.order }).first();
    expect(row.resource_id).toBe(service.id);
  });
});
