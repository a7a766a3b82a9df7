import { afterAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { useTestContext } from '../../helpers/context';
import { addMember, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { freePort } from '../../helpers/ports';
import { startReceiver, type Receiver } from '../../helpers/receiver';
import { emitIntegrationEvent } from '../../../core/integration-events';
import { createDeployWorld } from '../../helpers/deploy-fixtures';
import { createAccessToken } from '../../helpers/fixtures';
import { Integration } from '../../../db/models/integration';
import { until } from '../../helpers/until';
import { whileTemporalUnreachable } from '../../helpers/temporal-unreachable';

const t = useTestContext({ worker: true, edge: false, smtp: true, env: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' } });
const receivers: Receiver[] = [];
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.stop()));
});

async function admin() {
  const user = await createUser(t);
  const team = await createTeam(t, user);
  return { user, team, agent: await sessionAgent(t, user) };
}

async function receiver(port = 0) {
  const r = await startReceiver(port);
  receivers.push(r);
  return r;
}

const taskData = {
  task: { id: '7d9c2c1e-0000-4000-8000-000000000001', type: 'deploy', kind: 'deployments', status: 'succeeded' },
  project: { id: 'p', name: 'shop' },
  environment: { id: 'e', name: 'production' },
};

describe('GET /teams/{id}/integrations/new and POST .../fields', () => {
  it('lists the kinds and what each asks for', async () => {
    const { team, agent } = await admin();
    const kinds = await agent.get(`/teams/${team.id}/integrations/new`);
    expect(kinds.status).toBe(200);
    expect(kinds.body.kinds).toEqual([
      { kind: 'webhook', name: 'Webhook' },
      { kind: 'slack', name: 'Slack' },
    ]);
    expect(kinds.body.events).toContain('task.failed');
    const slack = await agent.post(`/teams/${team.id}/integrations/fields`, { kind: 'slack' });
    expect(slack.body.fields).toEqual([
      expect.objectContaining({ name: 'webhook_url', type: 'url', required: true, secret: true }),
    ]);
    const bad = await agent.post(`/teams/${team.id}/integrations/fields`, { kind: 'irc' });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.error.fields)).toEqual(['kind']);
  });
});

describe('POST /teams/{id}/integrations', () => {
  it('creates a webhook and shows its whsec_ secret once', async () => {
    const { team, agent } = await admin();
    const res = await agent.post(`/teams/${team.id}/integrations`, {
      kind: 'webhook',
      name: 'CI',
      events: ['task.succeeded'],
      url: 'https://hooks.example.test/vc',
    });
    expect(res.status).toBe(201);
    expect(res.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const got = await agent.get(`/integrations/${res.body.id}`);
    expect(got.body).toMatchObject({
      kind: 'webhook',
      name: 'CI',
      url: 'https://hooks.example.test/vc',
      deliveries: [],
    });
    expect(got.text).not.toContain(res.body.secret.slice(6));
    const row = await Integration.query(t.deps.knex).findById(res.body.id);
    expect(row!.sealed_secret).not.toContain(res.body.secret.slice(6));
  });

  it('refuses a URL that is not http(s), an unknown kind or event, naming each field, and keeps nothing', async () => {
    const { team, agent } = await admin();
    const bad = await agent.post(`/teams/${team.id}/integrations`, {
      kind: 'webhook',
      name: '',
      events: ['task.exploded'],
      url: 'ftp://example.test/x',
    });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.error.fields).sort()).toEqual(['events.0', 'name', 'url']);
    const creds = await agent.post(`/teams/${team.id}/integrations`, {
      kind: 'slack',
      name: 'x',
      events: ['task.failed'],
      webhook_url: 'javascript:alert(1)',
    });
    expect(Object.keys(creds.body.error.fields)).toEqual(['webhook_url']);
    const kind = await agent.post(`/teams/${team.id}/integrations`, {
      kind: 'irc',
      name: 'x',
      events: ['task.failed'],
    });
    expect(Object.keys(kind.body.error.fields)).toEqual(['kind']);
    expect(await Integration.query(t.deps.knex).where({ team_id: team.id })).toEqual([]);
  });

  it('is for admins and owners: a developer gets 403, another team 404', async () => {
    const { team } = await admin();
    const dev = await createUser(t);
    await addMember(t, team, dev, 'developer');
    const body = { kind: 'webhook', name: 'x', events: ['task.failed'], url: 'https://example.test/' };
    expect((await (await sessionAgent(t, dev)).post(`/teams/${team.id}/integrations`, body)).status).toBe(403);
    const other = await admin();
    expect((await other.agent.post(`/teams/${team.id}/integrations`, body)).status).toBe(404);
  });
});

describe('GET /teams/{id}/integrations', () => {
  it("lists the team's integrations oldest first, secrets hidden; a viewer reads it, another team gets 404", async () => {
    const { team, agent } = await admin();
    expect((await agent.get(`/teams/${team.id}/integrations`)).body).toEqual({ data: [] });
    const hook = await agent.post(`/teams/${team.id}/integrations`, {
      kind: 'webhook',
      name: 'CI',
      events: ['task.succeeded'],
      url: 'https://hooks.example.test/vc?token=abc',
    });
    const slack = await agent.post(`/teams/${team.id}/integrations`, {
      kind: 'slack',
      name: 'Chat',
      events: ['task.failed'],
      webhook_url: 'https://hooks.slack.example.test/services/T0/B0/SECRETPART',
    });
    expect([hook.status, slack.status]).toEqual([201, 201]);
    const viewer = await createUser(t);
    await addMember(t, team, viewer, 'viewer');
    const res = await (await sessionAgent(t, viewer)).get(`/teams/${team.id}/integrations`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.map((i: { id: string }) => i.id)).toEqual([hook.body.id, slack.body.id]);
    expect(res.body.data[0]).toMatchObject({ kind: 'webhook', name: 'CI', events: ['task.succeeded'] });
    expect(res.body.data[0].deliveries).toBeUndefined();
    expect(res.body.data[1]).toMatchObject({ kind: 'slack', name: 'Chat' });
    expect(res.text).not.toContain('SECRETPART');
    expect(res.text).not.toContain('token=abc');
    expect(res.text).not.toContain(hook.body.secret.slice(6));
    const other = await admin();
    expect((await other.agent.get(`/teams/${team.id}/integrations`)).status).toBe(404);
  });
});

describe('POST and DELETE /integrations/{id}', () => {
  it('changes the name and events, then deletes it', async () => {
    const { team, agent } = await admin();
    const created = await agent.post(`/teams/${team.id}/integrations`, {
      kind: 'slack',
      name: 'Ops',
      events: ['task.failed'],
      webhook_url: 'https://hooks.slack.example/services/T/B/X',
    });
    expect(created.body.secret).toBeUndefined();
    expect(JSON.stringify(created.body)).not.toContain('hooks.slack');
    const changed = await agent.post(`/integrations/${created.body.id}`, {
      name: 'Ops alerts',
      events: ['task.failed', 'backup.failed'],
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ name: 'Ops alerts', events: ['task.failed', 'backup.failed'] });
    const wrong = await agent.post(`/integrations/${created.body.id}`, { url: 'https://x.test/' });
    expect(wrong.status).toBe(422);
    expect(Object.keys(wrong.body.error.fields)).toEqual(['url']);
    const other = await admin();
    expect((await other.agent.delete(`/integrations/${created.body.id}`)).status).toBe(404);
    expect((await agent.delete(`/integrations/${created.body.id}`)).status).toBe(204);
    expect((await agent.get(`/integrations/${created.body.id}`)).status).toBe(404);
  });
});

describe('delivering events', () => {
  it('POSTs the event to a webhook signed as Standard Webhooks specify, verified by the standardwebhooks package', async () => {
    const { team, agent } = await admin();
    const r = await receiver();
    const created = await agent.post(`/teams/${team.id}/integrations`, {
      kind: 'webhook',
      name: 'CI',
      events: ['task.succeeded'],
      url: r.url,
    });
    const ids = await emitIntegrationEvent(t.deps, { teamId: team.id, event: 'task.succeeded', data: taskData });
    expect(ids).toHaveLength(1);
    // An event the integration does not listen for is not sent.
    expect(await emitIntegrationEvent(t.deps, { teamId: team.id, event: 'task.failed', data: taskData })).toEqual([]);
    const [got] = await r.waitFor(1);
    const verified = new Webhook(created.body.secret).verify(got.body, got.headers as Record<string, string>) as {
      id: string;
    };
    expect(verified).toMatchObject({ event: 'task.succeeded', team_id: team.id, data: taskData });
    expect(got.headers['webhook-id']).toBe(verified.id);
    expect(got.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(() =>
      new Webhook(created.body.secret).verify(got.body.replace('shop', 'shoq'), got.headers as Record<string, string>),
    ).toThrow();

    const shown = await until(
      'the delivery to be delivered',
      () => agent.get(`/integrations/${created.body.id}`),
      (res) => res.body.deliveries[0]?.status === 'delivered',
      30_000,
    );
    expect(shown.body.deliveries).toEqual([
      expect.objectContaining({ event: 'task.succeeded', status: 'delivered', attempts: 1, response_status: 204 }),
    ]);
  });

  it('retries with backoff: a receiver that is down for a while gets the event once it is back, with the same id', async () => {
    const { team, agent } = await admin();
    const port = await freePort();
    const created = await agent.post(`/teams/${team.id}/integrations`, {
      kind: 'webhook',
      name: 'CI',
      events: ['task.failed'],
      url: `http://127.0.0.1:${port}/hook`,
    });
    await emitIntegrationEvent(t.deps, { teamId: team.id, event: 'task.failed', data: taskData });
    // Nothing listens: the first attempt fails to connect.
    const first = await until(
      'a first attempt',
      () => agent.get(`/integrations/${created.body.id}`),
      (res) => res.body.deliveries[0]?.attempts >= 1,
      30_000,
    );
    expect(first.body.deliveries[0]).toMatchObject({ status: 'pending', response_status: null });
    // Back, but answering 503 once, then 200.
    const r = await receiver(port);
    r.answers.push(503);
    r.fallback = 200;
    const got = await r.waitFor(2);
    expect(got[0].headers['webhook-id']).toBe(got[1].headers['webhook-id']);
    new Webhook(created.body.secret).verify(got[1].body, got[1].headers as Record<string, string>);
    const done = await until(
      'the delivery to end',
      () => agent.get(`/integrations/${created.body.id}`),
      (res) => res.body.deliveries[0]?.status === 'delivered',
      30_000,
    );
    expect(done.body.deliveries[0]).toMatchObject({ status: 'delivered', response_status: 200 });
    expect(done.body.deliveries[0].attempts).toBeGreaterThanOrEqual(3);
  });

  it('never reaches an internal address that OUTBOUND_ALLOWED_HOSTS does not list: the delivery fails at once', async () => {
    const { team, agent } = await admin();
    const created = await agent.post(`/teams/${team.id}/integrations`, {
      kind: 'webhook',
      name: 'Inside',
      events: ['task.failed'],
      url: 'http://10.0.0.1:9/hook',
    });
    await emitIntegrationEvent(t.deps, { teamId: team.id, event: 'task.failed', data: taskData });
    const done = await until(
      'the delivery to end',
      () => agent.get(`/integrations/${created.body.id}`),
      (res) => res.body.deliveries[0]?.status === 'failed',
      30_000,
    );
    expect(done.body.deliveries[0]).toMatchObject({ status: 'failed', attempts: 1, response_status: null });
  });

  it('posts Slack a {text} that reads well', async () => {
    const { team, agent } = await admin();
    const r = await receiver();
    await agent.post(`/teams/${team.id}/integrations`, {
      kind: 'slack',
      name: 'Ops',
      events: ['task.failed', 'domain.verified'],
      webhook_url: r.url,
    });
    await emitIntegrationEvent(t.deps, {
      teamId: team.id,
      event: 'task.failed',
      data: { ...taskData, reason: 'npm ci exited with 1' },
    });
    const [got] = await r.waitFor(1);
    expect(JSON.parse(got.body)).toEqual({
      text: ':x: Deploy of *shop / production* failed: npm ci exited with 1 (task 7d9c2c1e-0000-4000-8000-000000000001)',
    });
    await emitIntegrationEvent(t.deps, {
      teamId: team.id,
      event: 'domain.verified',
      data: {
        domain: { hostname: 'shop.example.com' },
        project: { name: 'shop' },
        environment: { name: 'production' },
      },
    });
    const both = await r.waitFor(2);
    expect(JSON.parse(both[1].body).text).toBe(':lock: Domain *shop.example.com* is verified for *shop / production*');
  });
});

describe('token.expiring', () => {
  /** A team with a Slack integration that hears token.expiring, and a 7-day token of `purpose` in it. */
  async function teamTokenHeard(purpose: string) {
    const { user, team, agent } = await admin();
    const r = await receiver();
    await agent.post(`/teams/${team.id}/integrations`, {
      kind: 'slack',
      name: 'Ops',
      events: ['token.expiring'],
      webhook_url: r.url,
    });
    await createAccessToken(t, user, team, 7, purpose);
    return { team, r };
  }

  it('is posted to Slack when the expiry reminder of a team token is sent', async () => {
    const { team, r } = await teamTokenHeard('CI deploys');
    await t.deps.temporal.workflow.execute('sendTokenExpiryReminders', {
      taskQueue: t.config.taskQueue,
      workflowId: `reminders-test-${team.id}`,
      args: [{}],
    });
    const [got] = await r.waitFor(1);
    expect(JSON.parse(got.body).text).toMatch(
      new RegExp(`^:hourglass: Access token "CI deploys" of \\*${team.name}\\* expires on \\d{4}-\\d{2}-\\d{2}$`),
    );
  });

  it('is announced by the retry when Temporal did not answer as the reminder was sent', async () => {
    const { team, r } = await teamTokenHeard('CI retried');
    const handle = await t.deps.temporal.workflow.start('sendTokenExpiryReminders', {
      taskQueue: t.config.taskQueue,
      workflowId: `reminders-retry-test-${team.id}`,
      args: [{}],
    });
    // the worker's activities reach Temporal through the context's client: while it does not answer, the announcement
    // fails; the reminder's activity is then retried (or, where the failure was swallowed, the run ends)
    await whileTemporalUnreachable(t, () =>
      until(
        'the reminder to fail once, or the run to end',
        async () => {
          const d = await handle.describe();
          const pending = d.raw.pendingActivities?.find((a) => a.activityType?.name === 'sendTokenReminder');
          return d.status.name !== 'RUNNING' || (pending?.attempt ?? 0) >= 2;
        },
        { timeoutMs: 30_000 },
      ),
    );
    await handle.result();
    const got = (await r.waitFor(1)).filter((m) => m.body.includes('CI retried'));
    expect(got).toHaveLength(1);
  });
});

describe('task events', () => {
  it('tells the webhook the project rule names when a deploy succeeds, and e-mails the admins', async () => {
    const w = await createDeployWorld(t);
    const owner = await sessionAgent(t, w.owner);
    const r = await receiver();
    const created = await owner.post(`/teams/${w.team.id}/integrations`, {
      kind: 'webhook',
      name: 'CI',
      events: ['task.succeeded', 'task.failed'],
      url: r.url,
    });
    const left = await owner.post(`/teams/${w.team.id}/integrations`, {
      kind: 'webhook',
      name: 'Other',
      events: ['task.succeeded'],
      url: r.url + '/other',
    });
    const rule = await owner.post(`/projects/${w.project.id}/notifications`, {
      rules: [{ event: 'task.succeeded', email: 'admins', integration_ids: [created.body.id] }],
    });
    expect(rule.status).toBe(200);
    const deploy = await w.api.post(`/environments/${w.environment.id}/deploy`);
    expect(deploy.status).toBe(202);
    const [got] = await r.waitFor(1, 60_000);
    const event = new Webhook(created.body.secret).verify(got.body, got.headers as Record<string, string>);
    expect(event).toMatchObject({
      id: `evt_task_${deploy.body.id}`,
      event: 'task.succeeded',
      team_id: w.team.id,
      data: {
        task: { id: deploy.body.id, type: 'deploy', kind: 'deployments', status: 'succeeded' },
        project: { id: w.project.id, name: w.project.name },
        environment: { id: w.environment.id, name: 'production' },
      },
    });
    // The rule left the other webhook out; the owner (an admin) got an e-mail, the developer did not.
    expect((await owner.get(`/integrations/${left.body.id}`)).body.deliveries).toEqual([]);
    const mail = await t.smtp!.waitFor(
      (m) => m.to.includes(w.owner.email) && m.subject === 'Deploy of ' + w.project.name + ' / production succeeded',
    );
    expect(mail.text).toContain(`/tasks/${deploy.body.id}`);
    expect(t.smtp!.messages.some((m) => m.to.includes(w.developer.email))).toBe(false);
  });
});
