import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { dropRedisPrefix, REDIS_URL } from '../guards/failed-credentials.suite';

/**
 * Creations that send mail or hold a pending code are throttled per client address, in the store the
 * other guards use (here Redis, as with several API processes). The API trusts one proxy hop, so each
 * test speaks from its own address (X-Forwarded-For).
 */
const prefix = `vc-test-${randomBytes(6).toString('hex')}`;
const t = useTestContext({
  env: {
    TRUST_PROXY_HOPS: '1',
    RATE_LIMIT_PREFIX: prefix,
    REDIS_URL,
    INVITATIONS_PER_HOUR: '3',
    DEVICE_CODES_PER_HOUR: '3',
  },
});
afterAll(() => dropRedisPrefix(prefix));

let n = 0;
const from = () => ({ 'x-forwarded-for': `203.0.113.${++n}` });

describe('POST /cli/sessions', () => {
  it('answers 429 rate_limited with Retry-After beyond DEVICE_CODES_PER_HOUR from one address, and stores no code', async () => {
    const address = from();
    for (let i = 0; i < 3; i++)
      expect((await t.agent().request('POST', '/cli/sessions', { headers: address })).status).toBe(200);
    const before = await t.deps.knex('cli_device_codes').count({ n: '*' }).first();
    const refused = await t.agent().request('POST', '/cli/sessions', { headers: address });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await t.deps.knex('cli_device_codes').count({ n: '*' }).first()).toEqual(before);
    // Another address is not held up.
    expect((await t.agent().request('POST', '/cli/sessions', { headers: from() })).status).toBe(200);
  });
});

describe('POST /teams/{id}/invitations', () => {
  it('answers 429 rate_limited beyond INVITATIONS_PER_HOUR from one address (renewals count), and sends nothing more', async () => {
    const owner = await createUser(t);
    const team = await createTeam(t, owner);
    const agent = await sessionAgent(t, owner);
    const address = from();
    const invite = (i: number) =>
      agent.request('POST', `/teams/${team.id}/invitations`, {
        headers: address,
        body: { email: `guest${i}-${n}@example.test`, role: 'viewer' },
      });
    const first = await invite(1);
    expect(first.status).toBe(201);
    expect((await invite(2)).status).toBe(201);
    expect((await agent.request('POST', `/invitations/${first.body.id}/renew`, { headers: address })).status).toBe(200);
    const refused = await invite(3);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await t.deps.knex('invitations').where({ team_id: team.id }).count({ n: '*' }).first()).toEqual({ n: 2 });
    expect(
      (
        await agent.request('POST', `/teams/${team.id}/invitations`, {
          headers: from(),
          body: { email: `guest4-${n}@example.test`, role: 'viewer' },
        })
      ).status,
    ).toBe(201);
  });
});
