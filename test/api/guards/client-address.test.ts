import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../../api/app';
import { generateSecret } from '../../../api/lib/token-format';
import { useTestContext } from '../../helpers/context';
import { createAccessToken, createTeam, createUser } from '../../helpers/fixtures';
import { Agent } from '../../helpers/http';
import { dropRedisPrefix, REDIS_URL } from './failed-credentials.suite';

/**
 * The client address the failed-credential guard counts: the socket's, unless TRUST_PROXY_HOPS says
 * how many proxies in front append to X-Forwarded-For. This file's API trusts none; a second app on
 * the same deps (same counters) trusts one.
 */
const prefix = `vc-test-${randomBytes(6).toString('hex')}`;
const t = useTestContext({ env: { REDIS_URL, RATE_LIMIT_PREFIX: prefix } });
let behindProxy: Server;
let proxied: Agent;

beforeAll(async () => {
  behindProxy = createServer(createApp({ ...t.deps, config: { ...t.config, trustProxyHops: 1 } }).callback());
  await new Promise<void>((r) => behindProxy.listen(0, '127.0.0.1', r));
  proxied = new Agent(`http://127.0.0.1:${(behindProxy.address() as { port: number }).port}/api/vc/v1`);
});
afterAll(async () => {
  behindProxy?.closeAllConnections();
  await new Promise((r) => behindProxy?.close(r));
  await dropRedisPrefix(prefix);
});

const LIMIT = 10;
const validToken = async () => {
  const user = await createUser(t);
  return createAccessToken(t, user, await createTeam(t, user));
};
const ask = (agent: Agent, forwardedFor: string, token: string) =>
  agent.get('/me/tokens', { headers: { 'x-forwarded-for': forwardedFor, authorization: `Bearer ${token}` } });

describe('client address with TRUST_PROXY_HOPS=1', () => {
  it('counts the address the proxy appended (the last X-Forwarded-For entry), whatever the client put before it', async () => {
    for (let i = 0; i < LIMIT; i++) {
      expect((await ask(proxied, `203.0.113.${i}, 10.0.0.7`, generateSecret('vcp_'))).status).toBe(401);
    }
    const good = await validToken();
    expect((await ask(proxied, '192.0.2.99, 10.0.0.7', good)).status).toBe(429);
    expect((await ask(proxied, '10.0.0.7', good)).status).toBe(429);
    const other = await ask(proxied, '203.0.113.1, 10.0.0.8', good);
    expect(other.status).toBe(403);
    expect(other.body.error.code).toBe('token_not_allowed');
  });

  it('counts an IPv6 client by its /64', async () => {
    for (let i = 1; i <= LIMIT; i++) {
      expect((await ask(proxied, `2001:db8:1:2::${i.toString(16)}`, generateSecret('vcp_'))).status).toBe(401);
    }
    const good = await validToken();
    expect((await ask(proxied, '2001:db8:1:2:ffff:ffff:ffff:ffff', good)).status).toBe(429);
    expect((await ask(proxied, '2001:db8:1:3::1', good)).status).toBe(403);
  });
});

describe('client address with TRUST_PROXY_HOPS=0 (the default)', () => {
  it('ignores X-Forwarded-For and counts the socket address', async () => {
    const direct = t.agent();
    for (let i = 0; i < LIMIT; i++) {
      // A different forged address each time: all of them count against 127.0.0.1.
      expect((await ask(direct, `198.51.100.${i}`, generateSecret('vcp_'))).status).toBe(401);
    }
    const res = await ask(direct, '192.0.2.200', await validToken());
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe('rate_limited');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
