import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { addMember, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { openSubscription } from '../../../db/queries/subscriptions';
import { BillingDetails } from '../../../db/models/billing-details';
import { Subscription } from '../../../db/models/subscription';
import { until } from '../../helpers/until';

const t = useTestContext({ worker: true, edge: false });

async function owner() {
  const user = await createUser(t);
  const team = await createTeam(t, user);
  return { user, team, agent: await sessionAgent(t, user) };
}

describe('POST /billing/address-format', () => {
  it("gives a country's fields, which are required, and its lines, from Google's address data", async () => {
    const { agent } = await owner();
    const de = await agent.post('/billing/address-format', { country: 'de' });
    expect(de.status).toBe(200);
    expect(de.body.country).toBe('DE');
    expect(de.body.lines).toEqual([['name'], ['company_name'], ['street_address'], ['postal_code', 'city']]);
    const required = (body: { fields: Array<{ name: string; required: boolean }> }) =>
      body.fields
        .filter((f) => f.required)
        .map((f) => f.name)
        .sort();
    expect(required(de.body)).toEqual(['city', 'name', 'postal_code', 'street_address']);

    const us = await agent.post('/billing/address-format', { country: 'US' });
    expect(us.body.lines.at(-1)).toEqual(['city', 'country_area', 'postal_code']);
    const state = us.body.fields.find((f: { name: string }) => f.name === 'country_area');
    expect(state).toMatchObject({ label: 'State', required: true });
    expect(state.choices).toContain('CA');
    expect(us.body.fields.find((f: { name: string }) => f.name === 'postal_code').label).toBe('ZIP code');
  });

  it('refuses an unknown or malformed country with 422 on country', async () => {
    const { agent } = await owner();
    for (const country of ['XX', 'ZZ', 'Germany', '']) {
      const res = await agent.post('/billing/address-format', { country });
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.fields)).toEqual(['country']);
    }
  });
});

describe('POST /teams/{id}/billing', () => {
  it("saves details whose address fits the country's format and shows them in GET", async () => {
    const { team, agent } = await owner();
    const res = await agent.post(`/teams/${team.id}/billing`, {
      name: 'Acme GmbH',
      email: 'billing@acme.test',
      country: 'DE',
      vat_id: 'DE123456789',
      street_address: 'Hauptstraße 1',
      postal_code: '10115',
      city: 'Berlin',
    });
    expect(res.status).toBe(200);
    const got = await agent.get(`/teams/${team.id}/billing`);
    expect(got.body.details).toEqual({
      name: 'Acme GmbH',
      email: 'billing@acme.test',
      country: 'DE',
      vat_id: 'DE123456789',
      street_address: 'Hauptstraße 1',
      postal_code: '10115',
      city: 'Berlin',
    });
  });

  it('names each missing or invalid field for the country, and keeps nothing', async () => {
    const { team, agent } = await owner();
    const us = await agent.post(`/teams/${team.id}/billing`, {
      name: 'Acme Inc',
      email: 'billing@acme.test',
      country: 'US',
      street_address: '1 Main St',
      country_area: 'Atlantis',
      postal_code: '9410',
    });
    expect(us.status).toBe(422);
    expect(us.body.error.fields).toEqual({
      city: 'is required in US',
      country_area: 'is not valid in US',
      postal_code: 'is not valid in US',
    });
    const unknown = await agent.post(`/teams/${team.id}/billing`, { name: 'A', email: 'a@b.test', country: 'XX' });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.fields.country).toBeDefined();
    const foreign = await agent.post(`/teams/${team.id}/billing`, {
      name: 'A',
      email: 'a@b.test',
      country: 'DE',
      street_address: 'x',
      postal_code: '10115',
      city: 'Berlin',
      country_area: 'Texas',
    });
    expect(foreign.body.error.fields).toEqual({ country_area: 'is not part of an address in DE' });
    expect(await BillingDetails.query(t.deps.knex).findById(team.id)).toBeUndefined();
  });

  it('matches a region to its key (California -> CA)', async () => {
    const { team, agent } = await owner();
    const res = await agent.post(`/teams/${team.id}/billing`, {
      name: 'Acme Inc',
      email: 'billing@acme.test',
      country: 'us',
      street_address: '1 Main St',
      city: 'San Francisco',
      country_area: 'California',
      postal_code: '94103',
    });
    expect(res.status).toBe(200);
    expect(res.body.details).toMatchObject({ country: 'US', country_area: 'CA' });
  });

  it('is for owners only: an admin gets 403, another team 404', async () => {
    const { team } = await owner();
    const admin = await createUser(t);
    await addMember(t, team, admin, 'admin');
    expect((await (await sessionAgent(t, admin)).get(`/teams/${team.id}/billing`)).status).toBe(403);
    const stranger = await owner();
    expect((await stranger.agent.get(`/teams/${team.id}/billing`)).status).toBe(404);
  });
});

describe('GET /teams/{id}/billing', () => {
  it('lists the subscriptions with their order and the monthly total of those still running', async () => {
    const { team, agent } = await owner();
    const a = await openSubscription(t.deps.knex, {
      teamId: team.id,
      kind: 'server',
      item: 'Web server, plan small',
      monthlyPrice: 12.5,
      currency: 'EUR',
    });
    await openSubscription(t.deps.knex, {
      teamId: team.id,
      kind: 'storage',
      item: 'Storage, 10 GB',
      monthlyPrice: 2.25,
      currency: 'EUR',
    });
    const ended = await openSubscription(t.deps.knex, {
      teamId: team.id,
      kind: 'service',
      item: 'Redis',
      monthlyPrice: 99,
      currency: 'EUR',
    });
    await Subscription.query(t.deps.knex).patchAndFetchById(ended.id, { status: 'ended', ended_at: new Date() });
    const res = await agent.get(`/teams/${team.id}/billing`);
    expect(res.status).toBe(200);
    expect(res.body.details).toBeNull();
    expect(res.body.monthly_total).toBe(14.75);
    expect(res.body.subscriptions).toHaveLength(3);
    expect(res.body.subscriptions[0]).toMatchObject({
      order: a.order,
      item: 'Web server, plan small',
      monthly_price: 12.5,
      status: 'active',
      ends_at: null,
    });
    expect(a.order).toMatch(/^ord_[a-z0-9]{12}$/);
  });
});

describe('POST /teams/{id}/subscriptions/{order}/cancel', () => {
  it('says what ends and when, refuses without confirm, then ends the subscription at its period end by a timer', async () => {
    const { team, agent } = await owner();
    // Started a month ago less three seconds: its period ends three seconds from now.
    const startedAt = new Date(Date.now() + 3000);
    startedAt.setUTCMonth(startedAt.getUTCMonth() - 1);
    const sub = await openSubscription(t.deps.knex, {
      teamId: team.id,
      kind: 'server',
      item: 'Web server, plan small',
      monthlyPrice: 12,
      currency: 'EUR',
      startedAt,
    });
    const path = `/teams/${team.id}/subscriptions/${sub.order}/cancel`;

    const preview = await agent.get(path);
    expect(preview.status).toBe(200);
    expect(preview.body).toMatchObject({ order: sub.order, status: 'active', monthly_price: 12 });
    expect(Math.abs(new Date(preview.body.ends_at).getTime() - (startedAt.getTime() + 0))).toBeGreaterThan(
      20 * 86_400_000,
    );
    expect(preview.body.ends).toContain('the server stops');

    for (const body of [{}, { confirm: false }, { confirm: 'yes' }]) {
      const refused = await agent.post(path, body);
      expect(refused.status).toBe(422);
      expect(Object.keys(refused.body.error.fields)).toEqual(['confirm']);
    }
    expect((await Subscription.query(t.deps.knex).findById(sub.id))!.status).toBe('active');

    const res = await agent.post(path, { confirm: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ order: sub.order, status: 'cancelling', ends_at: preview.body.ends_at });
    expect((await agent.post(path, { confirm: true })).body.error.code).toBe('subscription_not_active');

    const done = await until(
      'the subscription to end',
      async () => Subscription.query(t.deps.knex).findById(sub.id),
      (s) => s!.status === 'ended',
    );
    expect(done!.status).toBe('ended');
    expect(done!.ended_at!.toISOString()).toBe(preview.body.ends_at);
    const billing = await agent.get(`/teams/${team.id}/billing`);
    expect(billing.body.monthly_total).toBe(0);
  });

  it("answers 404 for another team's order", async () => {
    const a = await owner();
    const b = await owner();
    const sub = await openSubscription(t.deps.knex, {
      teamId: a.team.id,
      kind: 'server',
      item: 'x',
      monthlyPrice: 1,
      currency: 'EUR',
    });
    expect((await b.agent.get(`/teams/${b.team.id}/subscriptions/${sub.order}/cancel`)).status).toBe(404);
    expect(
      (await b.agent.post(`/teams/${a.team.id}/subscriptions/${sub.order}/cancel`, { confirm: true })).status,
    ).toBe(404);
  });
});
