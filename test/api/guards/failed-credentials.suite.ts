import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { AccessToken } from '../../../db/models/access-token';
import { generateSecret, tokenDigest } from '../../../api/lib/token-format';
import { useTestContext } from '../../helpers/context';
import { createAccessToken, createTeam, createUser } from '../../helpers/fixtures';

/** TEST_REDIS_URL, or the run's own Redis (test/helpers/run-services.ts). */
export const REDIS_URL = inject('redisUrl');

/** Deletes every key under a test file's prefix. */
export async function dropRedisPrefix(prefix: string) {
  const redis = new Redis(REDIS_URL);
  try {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}

/**
 * The failed-credential guard, run against one store: Redis (shared by API processes) or this
 * process's memory. The API trusts one proxy hop, so every test speaks from its own address
 * (X-Forwarded-For) and no test sees another's count.
 */
export function failedCredentialsSuite(store: 'redis' | 'memory') {
  const prefix = `vc-test-${randomBytes(6).toString('hex')}`;
  const t = useTestContext({
    env: { TRUST_PROXY_HOPS: '1', RATE_LIMIT_PREFIX: prefix, ...(store === 'redis' ? { REDIS_URL } : {}) },
  });
  afterAll(async () => {
    if (store === 'redis') await dropRedisPrefix(prefix);
  });

  let n = 0;
  /** A client at a new address; `call(token?)` asks GET /me/tokens with that credential, or none. */
  const client = () => {
    const address = `198.51.100.${++n}`;
    const call = (authorization?: string) =>
      t
        .agent()
        .get('/me/tokens', { headers: { 'x-forwarded-for': address, ...(authorization ? { authorization } : {}) } });
    return { address, call, bearer: (token: string) => call(`Bearer ${token}`) };
  };
  const validToken = async () => {
    const user = await createUser(t);
    return createAccessToken(t, user, await createTeam(t, user));
  };
  const unknownToken = () => generateSecret('vcp_');
  const mistyped = (token: string) => token.slice(0, -1) + (token.endsWith('0') ? '1' : '0');
  const limit = 10;

  describe(`failed credentials per client address (${store} store)`, () => {
    it('a request without an Authorization header answers 401 and is not counted', async () => {
      const c = client();
      for (let i = 0; i < 15; i++) {
        const res = await c.call();
        expect(res.status).toBe(401);
        expect(res.body.error.code).toBe('unauthenticated');
      }
      for (let i = 0; i < limit - 1; i++) expect((await c.bearer(unknownToken())).status).toBe(401);
      const res = await c.bearer(await validToken());
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('token_not_allowed'); // it got through: 24 misses, only 9 counted
    });

    it(`${limit} failed credentials refuse the address with 429 rate_limited and Retry-After, even for a working token`, async () => {
      const c = client();
      for (let i = 0; i < limit; i++) {
        const res = await c.bearer(unknownToken());
        expect(res.status).toBe(401);
      }
      const res = await c.bearer(await validToken());
      expect(res.status).toBe(429);
      expect(res.body.error.code).toBe('rate_limited');
      const retryAfter = Number(res.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(890);
      expect(retryAfter).toBeLessThanOrEqual(900);
      // A request with no header is not refused by the block (it answers 401 as before).
      expect((await c.call()).status).toBe(401);
      // Another address is unaffected.
      expect((await client().bearer(await validToken())).status).toBe(403);
    });

    it('a malformed or mistyped token is refused before any database lookup and still counts', async () => {
      const c = client();
      const queries: string[] = [];
      const onQuery = (q: { sql: string }) => queries.push(q.sql);
      const good = await validToken();
      const malformed = [
        `Bearer ${mistyped(good)}`,
        `Bearer ${mistyped(unknownToken())}`,
        'Bearer vcp_short',
        `Bearer ${good.toUpperCase()}`,
        `Bearer ${good}x`,
        'Bearer ghp_0123456789abcdefghijklmnopqrstuvwxyz',
        `Basic ${Buffer.from(`user:${good}`).toString('base64')}`,
        'Bearer',
        `Token ${good}`,
        `Bearer ${good.replace('vcp_', 'vcs_')}`,
      ];
      expect(malformed).toHaveLength(limit);
      t.deps.knex.on('query', onQuery);
      try {
        for (const authorization of malformed) {
          const res = await c.call(authorization);
          expect(res.status).toBe(401);
        }
      } finally {
        t.deps.knex.off('query', onQuery);
      }
      expect(queries).toEqual([]);
      const res = await c.bearer(good);
      expect(res.status).toBe(429);
    });

    it('a well-formed token is looked up (the control of the test above)', async () => {
      const c = client();
      const queries: string[] = [];
      const onQuery = (q: { sql: string }) => queries.push(q.sql);
      t.deps.knex.on('query', onQuery);
      try {
        expect((await c.bearer(unknownToken())).status).toBe(401);
      } finally {
        t.deps.knex.off('query', onQuery);
      }
      expect(queries.some((sql) => sql.includes('access_tokens'))).toBe(true);
    });

    it('a working token clears the consecutive count', async () => {
      const c = client();
      const good = await validToken();
      for (let i = 0; i < limit - 1; i++) expect((await c.bearer(unknownToken())).status).toBe(401);
      expect((await c.bearer(good)).status).toBe(403);
      for (let i = 0; i < limit; i++) expect((await c.bearer(unknownToken())).status).toBe(401);
      // 19 failures, but only the last 10 are consecutive: now the address is refused.
      expect((await c.bearer(good)).status).toBe(429);
    });

    it('revoked and expired tokens count as failed credentials', async () => {
      const c = client();
      const user = await createUser(t);
      const team = await createTeam(t, user);
      const revoked = await createAccessToken(t, user, team);
      const expired = await createAccessToken(t, user, team);
      const digestOf = (token: string) => tokenDigest(token, t.deps.secrets.tokenKey.key);
      await AccessToken.query(t.deps.knex).where('digest', digestOf(revoked)).patch({ revoked_at: new Date() });
      await AccessToken.query(t.deps.knex).where('digest', digestOf(expired)).patch({ expires_at: new Date() });
      for (let i = 0; i < limit / 2; i++) {
        expect((await c.bearer(revoked)).status).toBe(401);
        expect((await c.bearer(expired)).status).toBe(401);
      }
      expect((await c.bearer(await validToken())).status).toBe(429);
    });

    it('a daily cap per address never resets on success, so one valid token cannot launder guesses', async () => {
      const cap = t.config.failedCredentials.dailyCap;
      const c = client();
      const good = await validToken();
      let failures = 0;
      while (failures < cap) {
        for (let i = 0; i < limit - 1 && failures < cap; i++, failures++) {
          expect((await c.bearer(unknownToken())).status).toBe(401);
        }
        if (failures < cap) expect((await c.bearer(good)).status).toBe(403); // clears the consecutive count
      }
      const res = await c.bearer(good);
      expect(res.status).toBe(429);
      expect(res.body.error.code).toBe('rate_limited');
      // Refused until the day's window ends, not just for the 15-minute block.
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(t.config.failedCredentials.blockSeconds);
    });
  });
}
