import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { addMember, createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { createEnvironment } from '../../helpers/deploy-fixtures';
import { startTxtServer, type TxtServer } from '../../helpers/dns';
import { whileTemporalUnreachable } from '../../helpers/temporal-unreachable';
import { domainListSchema, domainSchema } from '../../../api/domains/schemas';

// A real DNS server on loopback, started before the system so DNS_SERVERS can point at it.
const env: Record<string, string> = { DOMAIN_ALLOWANCE: '3', DOMAIN_RECHECK_SECONDS: '1' };
let dns: TxtServer;
beforeAll(async () => {
  dns = await startTxtServer();
  env.DNS_SERVERS = dns.server;
});
afterAll(() => dns?.close());

const t = useTestContext({ worker: true, edge: false, env });

async function world() {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  const project = await createProject(t, team);
  const environment = await createEnvironment(t, project, { name: 'production' });
  return { owner, team, project, environment, agent: await sessionAgent(t, owner) };
}

let n = 0;
const host = (label = 'shop') => `${label}${++n}-${Date.now().toString(36)}.example.test`;

describe('POST /environments/{id}/domains', () => {
  it('adds a pending domain with its TXT record to publish', async () => {
    const { environment, agent } = await world();
    const hostname = host();
    const res = await agent.post(`/environments/${environment.id}/domains`, { hostname: hostname.toUpperCase() });
    expect(res.status, res.text).toBe(201);
    const domain = domainSchema.parse(res.body);
    expect(domain).toMatchObject({ environment_id: environment.id, hostname, status: 'pending', verified_at: null });
    expect(domain.verification).toEqual({
      type: 'TXT',
      name: `_vc-verify.${hostname}`,
      value: expect.stringMatching(/^vc-verify=/),
      checks_left: 12,
    });
  });

  it('stores internationalized names as punycode', async () => {
    const { environment, agent } = await world();
    const res = await agent.post(`/environments/${environment.id}/domains`, { hostname: `Bücher-${++n}.example` });
    expect(res.status).toBe(201);
    expect(res.body.hostname).toMatch(/^xn--bcher-\d+-[a-z0-9]+\.example$/);
  });

  it('refuses anything but a hostname alone with 422 on hostname', async () => {
    const { environment, agent } = await world();
    for (const hostname of [
      'https://shop.example.com',
      'shop.example.com:8443',
      'shop.example.com/path',
      '*.example.com',
      'localhost',
      '10.0.0.1',
      'bad_label.example.com',
      '-a.example.com',
      '',
    ]) {
      const res = await agent.post(`/environments/${environment.id}/domains`, { hostname });
      expect(res.status, hostname).toBe(422);
      expect(res.body.error.fields.hostname, hostname).toBeTruthy();
    }
    expect((await agent.get(`/environments/${environment.id}/domains`)).body.data).toEqual([]);
  });

  it('refuses a hostname verified on any environment with 409 domain_taken', async () => {
    const a = await world();
    const b = await world();
    const hostname = host();
    const added = await a.agent.post(`/environments/${a.environment.id}/domains`, { hostname });
    expect(added.status).toBe(201);
    dns.set(added.body.verification.name, [added.body.verification.value]);
    expect((await a.agent.post(`/domains/${added.body.id}/verify`)).body.status).toBe('verified');
    const res = await b.agent.post(`/environments/${b.environment.id}/domains`, { hostname });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('domain_taken');
  });

  it("refuses past the project's allowance (pending domains count) with 409 domain_allowance_spent", async () => {
    const { project, environment, agent } = await world();
    const other = await createEnvironment(t, project, { name: 'staging' });
    for (const e of [environment, other, environment]) {
      expect((await agent.post(`/environments/${e.id}/domains`, { hostname: host() })).status).toBe(201);
    }
    const res = await agent.post(`/environments/${other.id}/domains`, { hostname: host() });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('domain_allowance_spent');
    const list = domainListSchema.parse((await agent.get(`/environments/${other.id}/domains`)).body);
    expect(list.allowance).toEqual({ used: 3, limit: 3 });
    await t.deps.knex('projects').where({ id: project.id }).update({ domain_allowance: 4 });
    expect((await agent.post(`/environments/${other.id}/domains`, { hostname: host() })).status).toBe(201);
  });

  it('is for admins and owners', async () => {
    const { team, environment } = await world();
    const dev = await createUser(t);
    await addMember(t, team, dev, 'developer');
    const res = await (await sessionAgent(t, dev)).post(`/environments/${environment.id}/domains`, {
      hostname: host(),
    });
    expect(res.status).toBe(403);
  });
});

describe('POST /domains/{id}/verify', () => {
  it('stays pending without the record, and is verified once DNS holds the value', async () => {
    const { environment, agent } = await world();
    const added = (await agent.post(`/environments/${environment.id}/domains`, { hostname: host() })).body;
    dns.set(added.verification.name, ['some-other-value']);
    const first = await agent.post(`/domains/${added.id}/verify`);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ status: 'pending', last_checked_at: expect.any(String) });
    dns.set(added.verification.name, ['unrelated', added.verification.value]);
    const second = await agent.post(`/domains/${added.id}/verify`);
    expect(domainSchema.parse(second.body)).toMatchObject({ status: 'verified', verified_at: expect.any(String) });
  });

  it('requests no certificate without ACME_DIRECTORY_URL, and says HTTPS is not configured', async () => {
    const { environment, agent } = await world();
    const added = (await agent.post(`/environments/${environment.id}/domains`, { hostname: host() })).body;
    const notConfigured = {
      status: 'none',
      issuer: null,
      expires_at: null,
      last_error: expect.stringMatching(/HTTPS is not configured.*ACME_DIRECTORY_URL/),
    };
    expect(added.certificate).toEqual(notConfigured);
    dns.set(added.verification.name, [added.verification.value]);
    const verified = await agent.post(`/domains/${added.id}/verify`);
    expect(verified.body).toMatchObject({ status: 'verified', certificate: notConfigured });
    const listed = (await agent.get(`/environments/${environment.id}/domains`)).body.data;
    expect(listed.find((d: { id: string }) => d.id === added.id).certificate).toEqual(notConfigured);
    expect(await t.deps.knex('tasks').whereIn('type', ['certificate_issue', 'certificate_renew'])).toEqual([]);
    expect(await t.deps.knex('certificates').where({ domain_id: added.id })).toEqual([]);
  });

  it('answers the 13th check of the hour with 429 and Retry-After, recording nothing', async () => {
    const { environment, agent } = await world();
    const added = (await agent.post(`/environments/${environment.id}/domains`, { hostname: host() })).body;
    for (let i = 0; i < 12; i++) expect((await agent.post(`/domains/${added.id}/verify`)).status).toBe(200);
    const before = await t.deps
      .knex('domain_verify_calls')
      .where({ domain_id: added.id })
      .count<{ n: string }[]>({ n: '*' });
    const res = await agent.post(`/domains/${added.id}/verify`);
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe('rate_limited');
    const retry = Number(res.headers.get('retry-after'));
    expect(retry).toBeGreaterThan(3500);
    expect(retry).toBeLessThanOrEqual(3600);
    expect(
      await t.deps.knex('domain_verify_calls').where({ domain_id: added.id }).count<{ n: string }[]>({ n: '*' }),
    ).toEqual(before);
  });
});

describe('background re-check', () => {
  it('is started before the domain is added: with Temporal unreachable the answer is 503 and nothing is added', async () => {
    const { environment, agent } = await world();
    const res = await whileTemporalUnreachable(t, () =>
      agent.post(`/environments/${environment.id}/domains`, { hostname: host() }),
    );
    expect(res.status, res.text).toBe(503);
    expect(res.body.error.message).toMatch(/not added; try again/);
    expect(await t.deps.knex('domains').where({ environment_id: environment.id })).toEqual([]);
    expect(
      await t.deps.knex('activity_events').where({ environment_id: environment.id, type: 'domain_added' }),
    ).toEqual([]);
  });

  it('verifies a pending domain by itself once the record appears', async () => {
    const { environment, agent } = await world();
    const added = (await agent.post(`/environments/${environment.id}/domains`, { hostname: host() })).body;
    dns.set(added.verification.name, [added.verification.value]);
    const deadline = Date.now() + 30_000;
    let status = 'pending';
    while (status !== 'verified' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      status = (await agent.get(`/environments/${environment.id}/domains`)).body.data[0].status;
    }
    expect(status).toBe('verified');
    expect(await t.deps.knex('domain_verify_calls').where({ domain_id: added.id })).toEqual([]);
  });
});

describe('PATCH /domains/{id}', () => {
  it('moves a domain to another environment of the same project, and refuses one of another project', async () => {
    const { project, environment, agent } = await world();
    const staging = await createEnvironment(t, project, { name: 'staging' });
    const elsewhere = await world();
    const added = (await agent.post(`/environments/${environment.id}/domains`, { hostname: host() })).body;
    const moved = await agent.patch(`/domains/${added.id}`, { environment_id: staging.id });
    expect(moved.status).toBe(200);
    expect(moved.body.environment_id).toBe(staging.id);
    const refused = await agent.patch(`/domains/${added.id}`, { environment_id: elsewhere.environment.id });
    expect(refused.status).toBe(422);
    expect(refused.body.error.fields.environment_id).toBeTruthy();
    expect((await t.deps.knex('domains').where({ id: added.id }).first()).environment_id).toBe(staging.id);
  });
});

describe('DELETE /domains/{id}', () => {
  it('removes the domain (204); the hostname is free again', async () => {
    const { environment, agent } = await world();
    const hostname = host();
    const added = (await agent.post(`/environments/${environment.id}/domains`, { hostname })).body;
    expect((await agent.delete(`/domains/${added.id}`)).status).toBe(204);
    expect((await agent.delete(`/domains/${added.id}`)).status).toBe(404);
    expect((await agent.post(`/environments/${environment.id}/domains`, { hostname })).status).toBe(201);
  });
});

describe('GET/POST /projects/{id}/settings', () => {
  it('changes only the fields given; domain_allowance governs adding domains; null goes back to the default', async () => {
    const { project, environment, agent } = await world();
    expect((await agent.get(`/projects/${project.id}/settings`)).body).toEqual({
      name: project.name,
      domain_allowance: 3,
      domain_allowance_is_default: true,
    });
    const res = await agent.post(`/projects/${project.id}/settings`, { domain_allowance: 1 });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ name: project.name, domain_allowance: 1, domain_allowance_is_default: false });
    expect((await agent.post(`/environments/${environment.id}/domains`, { hostname: host() })).status).toBe(201);
    expect((await agent.post(`/environments/${environment.id}/domains`, { hostname: host() })).body.error.code).toBe(
      'domain_allowance_spent',
    );
    const bad = await agent.post(`/projects/${project.id}/settings`, { domain_allowance: -1, name: 'Bad Name' });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.error.fields).sort()).toEqual(['domain_allowance', 'name']);
    expect(
      (await agent.post(`/projects/${project.id}/settings`, { domain_allowance: null })).body.domain_allowance,
    ).toBe(3);
  });
});
