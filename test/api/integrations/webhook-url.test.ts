/**
 * A webhook URL often carries its receiver's token in the query. It is a credential: kept sealed at rest,
 * shown in answers (to viewers too) without userinfo and with query values "redacted", as log destinations
 * are; deliveries still go to the whole URL. Rows kept in the clear by an older version are sealed when read.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { addMember, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { startReceiver, type Receiver } from '../../helpers/receiver';
import { emitIntegrationEvent } from '../../../core/integration-events';
import { seal } from '../../../system/crypto';
import { aad } from '../../../db/aad';

const t = useTestContext({ worker: true, edge: false, env: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' } });
const receivers: Receiver[] = [];
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.stop()));
});

const TOKEN = 'tok_5ecret_4f9a1c77e2';
const data = {
  task: { id: '7d9c2c1e-0000-4000-8000-000000000002', type: 'deploy', kind: 'deployments', status: 'failed' },
  project: { id: 'p', name: 'shop' },
  environment: { id: 'e', name: 'production' },
};

async function world() {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  const viewer = await createUser(t);
  await addMember(t, team, viewer, 'viewer');
  const r = await startReceiver();
  receivers.push(r);
  return { team, r, agent: await sessionAgent(t, owner), viewerAgent: await sessionAgent(t, viewer) };
}

async function storedText(id: string): Promise<string> {
  return JSON.stringify(await t.deps.knex('integrations').where({ id }).first());
}

describe('a webhook URL with a token in its query', () => {
  it('is sealed at rest, shown redacted to the owner and to viewers, and delivered to in full', async () => {
    const { team, r, agent, viewerAgent } = await world();
    const url = `${r.url}?token=${TOKEN}&channel=ops`;
    const created = await agent.post(`/teams/${team.id}/integrations`, {
      kind: 'webhook',
      name: 'Alerts',
      events: ['task.failed'],
      url,
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.url).toBe(`${r.url}?token=redacted&channel=redacted`);
    expect(created.text).not.toContain(TOKEN);
    expect(await storedText(created.body.id)).not.toContain(TOKEN);

    const seen = await viewerAgent.get(`/integrations/${created.body.id}`);
    expect(seen.status).toBe(200);
    expect(seen.body.url).toBe(`${r.url}?token=redacted&channel=redacted`);
    expect(seen.text).not.toContain(TOKEN);

    await emitIntegrationEvent(t.deps, { teamId: team.id, event: 'task.failed', data });
    const [got] = await r.waitFor(1);
    expect(got?.url).toBe(`/hook?token=${TOKEN}&channel=ops`);

    // A changed URL is sealed and redacted the same way.
    const changed = await agent.post(`/integrations/${created.body.id}`, { url: `${r.url}?key=${TOKEN}-2` });
    expect(changed.status).toBe(200);
    expect(changed.body.url).toBe(`${r.url}?key=redacted`);
    expect(await storedText(created.body.id)).not.toContain(TOKEN);
    await emitIntegrationEvent(t.deps, { teamId: team.id, event: 'task.failed', data });
    const both = await r.waitFor(2);
    expect(both[1]?.url).toBe(`/hook?key=${TOKEN}-2`);
  });

  it('kept in the clear by an older version, is sealed when it is read or delivered to', async () => {
    const { team, r, viewerAgent } = await world();
    const legacy = async (name: string) => {
      const [row] = await t.deps
        .knex('integrations')
        .insert({
          team_id: team.id,
          kind: 'webhook',
          name,
          events: ['task.failed'],
          config: { url: `${r.url}?token=${TOKEN}` },
          sealed_secret: 'pending',
        })
        .returning('id');
      await t.deps
        .knex('integrations')
        .where({ id: row.id })
        .update({
          sealed_secret: seal(t.deps.secrets, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', aad.integration(row.id)),
        });
      expect(await storedText(row.id)).toContain(TOKEN);
      return row.id as string;
    };
    const read = await legacy('Read');
    const shown = await viewerAgent.get(`/integrations/${read}`);
    expect(shown.status).toBe(200);
    expect(shown.body.url).toBe(`${r.url}?token=redacted`);
    expect(shown.text).not.toContain(TOKEN);
    expect(await storedText(read)).not.toContain(TOKEN);

    const delivered = await legacy('Delivered');
    await t.deps.knex('integrations').where({ id: read }).delete();
    await emitIntegrationEvent(t.deps, { teamId: team.id, event: 'task.failed', data });
    const [got] = await r.waitFor(1);
    expect(got?.url).toBe(`/hook?token=${TOKEN}`);
    expect(await storedText(delivered)).not.toContain(TOKEN);
  });
});
