/**
 * Domain claims as a squatter would try them (CONTRACT "Domains"): another team claims your hostname and
 * never verifies it. Pending claims stand side by side, the first to verify keeps the name and the other
 * claims are deleted (an activity event each), a pending claim expires after 7 days, and the verify
 * throttle counts per team and hostname. DNS answers come from a real DNS server on loopback.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { createEnvironment } from '../../helpers/deploy-fixtures';
import { startTxtServer, type TxtServer } from '../../helpers/dns';
import { domainListSchema, domainSchema } from '../../../api/domains/schemas';

// The background re-check waits an hour here: every check in this file is one the test makes.
const env: Record<string, string> = { DOMAIN_RECHECK_SECONDS: '3600' };
let dns: TxtServer;
beforeAll(async () => {
  dns = await startTxtServer();
  env.DNS_SERVERS = dns.server;
});
afterAll(() => dns?.close());

const t = useTestContext({ worker: true, edge: false, env });
const DAY = 86_400_000;

async function team(label: string) {
  const owner = await createUser(t);
  const tm = await createTeam(t, owner, label);
  const project = await createProject(t, tm);
  const environment = await createEnvironment(t, project, { name: 'production' });
  return { team: tm, environment, agent: await sessionAgent(t, owner) };
}

let n = 0;
const host = () => `www${++n}-${Date.now().toString(36)}.your-domain.test`;

async function activityTypes(w: Awaited<ReturnType<typeof team>>) {
  const res = await w.agent.get(`/teams/${w.team.id}/activity?environment=${w.environment.id}`);
  expect(res.status).toBe(200);
  return res.body.data as Array<{ type: string; summary: string; actor: unknown }>;
}

describe('pending claims of one hostname', () => {
  it("stand side by side: a squatter's pending claim does not block the owner, and the first to verify keeps the name", async () => {
    const squatter = await team('Squatter');
    const owner = await team('Owner');
    const hostname = host();
    const squat = await squatter.agent.post(`/environments/${squatter.environment.id}/domains`, { hostname });
    expect(squat.status).toBe(201);

    const claim = await owner.agent.post(`/environments/${owner.environment.id}/domains`, { hostname });
    expect(claim.status, claim.text).toBe(201);
    const mine = domainSchema.parse(claim.body);
    expect(mine.verification.value).not.toBe(squat.body.verification.value);

    // Only the owner can publish the record; the squatter's check finds another value.
    dns.set(mine.verification.name, [mine.verification.value]);
    const theirs = await squatter.agent.post(`/domains/${squat.body.id}/verify`);
    expect(theirs.status).toBe(200);
    expect(theirs.body.status).toBe('pending');

    const verified = await owner.agent.post(`/domains/${mine.id}/verify`);
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({ status: 'verified', hostname });

    // The squatter's claim is gone, with an event in the squatter's team (by the system).
    expect(await t.deps.knex('domains').where({ id: squat.body.id }).first()).toBeUndefined();
    const list = domainListSchema.parse(
      (await squatter.agent.get(`/environments/${squatter.environment.id}/domains`)).body,
    );
    expect(list.data).toEqual([]);
    const events = await activityTypes(squatter);
    expect(events[0]).toMatchObject({ type: 'domain_claim_lost', summary: expect.stringContaining(hostname) });
    expect(events[0].summary).not.toContain('Owner');
    expect((await squatter.agent.post(`/domains/${squat.body.id}/verify`)).status).toBe(404);

    // Now the name is taken for everyone else.
    const late = await team('Late');
    const refused = await late.agent.post(`/environments/${late.environment.id}/domains`, { hostname });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('domain_taken');
  });

  it('refuses a second claim of a hostname by the same team with 409 domain_taken', async () => {
    const w = await team('Twice');
    const hostname = host();
    expect((await w.agent.post(`/environments/${w.environment.id}/domains`, { hostname })).status).toBe(201);
    const again = await w.agent.post(`/environments/${w.environment.id}/domains`, { hostname });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('domain_taken');
  });
});

describe('a pending claim expires after 7 days', () => {
  it('is deleted by its next check, with an event by the system', async () => {
    const squatter = await team('Stale squatter');
    const hostname = host();
    const squat = await squatter.agent.post(`/environments/${squatter.environment.id}/domains`, { hostname });
    expect(squat.status).toBe(201);
    await t.deps
      .knex('domains')
      .where({ id: squat.body.id })
      .update({ created_at: new Date(Date.now() - 7 * DAY - 60_000) });
    const res = await squatter.agent.post(`/domains/${squat.body.id}/verify`);
    expect(res.status).toBe(404);
    expect(await t.deps.knex('domains').where({ id: squat.body.id }).first()).toBeUndefined();
    expect((await activityTypes(squatter))[0]).toMatchObject({ type: 'domain_expired', actor: { via: 'system' } });
  });

  it('is deleted by the daily prune (workflow pruneExpiredRecords); a younger one is kept', async () => {
    const w = await team('Pruned');
    const old = await w.agent.post(`/environments/${w.environment.id}/domains`, { hostname: host() });
    const young = await w.agent.post(`/environments/${w.environment.id}/domains`, { hostname: host() });
    await t.deps
      .knex('domains')
      .where({ id: old.body.id })
      .update({ created_at: new Date(Date.now() - 8 * DAY) });
    await t.deps
      .knex('domains')
      .where({ id: young.body.id })
      .update({ created_at: new Date(Date.now() - 6 * DAY) });
    const result = (await t.deps.temporal.workflow.execute('pruneExpiredRecords', {
      taskQueue: t.config.taskQueue,
      workflowId: `prune-${randomUUID()}`,
      args: [{}],
    })) as { expiredDomains: number };
    expect(result.expiredDomains).toBeGreaterThanOrEqual(1);
    expect(await t.deps.knex('domains').where({ id: old.body.id }).first()).toBeUndefined();
    expect(await t.deps.knex('domains').where({ id: young.body.id }).first()).toBeDefined();
    expect((await activityTypes(w)).map((e) => e.type)).toContain('domain_expired');
  });
});

describe('the 12-checks-an-hour throttle', () => {
  it('counts per team and hostname: deleting and adding again does not reset it; answers carry checks_left', async () => {
    const w = await team('Throttled');
    const hostname = host();
    const first = await w.agent.post(`/environments/${w.environment.id}/domains`, { hostname });
    expect(domainSchema.parse(first.body).verification.checks_left).toBe(12);
    for (let i = 1; i <= 5; i++) {
      const res = await w.agent.post(`/domains/${first.body.id}/verify`);
      expect(res.status).toBe(200);
      expect(res.body.verification.checks_left).toBe(12 - i);
    }
    expect((await w.agent.delete(`/domains/${first.body.id}`)).status).toBe(204);
    const again = await w.agent.post(`/environments/${w.environment.id}/domains`, { hostname });
    expect(again.status).toBe(201);
    expect(again.body.verification.checks_left).toBe(7);
    for (let i = 0; i < 7; i++) expect((await w.agent.post(`/domains/${again.body.id}/verify`)).status).toBe(200);
    const listed = await w.agent.get(`/environments/${w.environment.id}/domains`);
    expect(listed.body.data[0].verification.checks_left).toBe(0);
    const refused = await w.agent.post(`/domains/${again.body.id}/verify`);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(3000);
  });

  it("a squatter's checks do not use up the owner's", async () => {
    const squatter = await team('Busy squatter');
    const owner = await team('Patient owner');
    const hostname = host();
    const squat = await squatter.agent.post(`/environments/${squatter.environment.id}/domains`, { hostname });
    for (let i = 0; i < 12; i++) {
      expect((await squatter.agent.post(`/domains/${squat.body.id}/verify`)).status).toBe(200);
    }
    expect((await squatter.agent.post(`/domains/${squat.body.id}/verify`)).status).toBe(429);
    const claim = await owner.agent.post(`/environments/${owner.environment.id}/domains`, { hostname });
    expect(claim.status).toBe(201);
    expect(claim.body.verification.checks_left).toBe(12);
    dns.set(claim.body.verification.name, [claim.body.verification.value]);
    const verified = await owner.agent.post(`/domains/${claim.body.id}/verify`);
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({ status: 'verified', verification: { checks_left: 11 } });
  });
});
