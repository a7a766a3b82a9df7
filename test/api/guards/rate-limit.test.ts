import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { Model } from 'objection';
import { afterAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../../processes/api-server';
import type { Deps } from '../../../system/deps';
import { createDeps } from '../../../processes/deps';
import { useTestContext } from '../../helpers/context';
import { createAccessToken, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { Agent } from '../../helpers/http';
import { dropRedisPrefix, REDIS_URL } from './failed-credentials.suite';

/** 600 requests a minute per personal access token, shared by every API process through Redis. */
const prefix = `vc-test-${randomBytes(6).toString('hex')}`;
const t = useTestContext({ env: { REDIS_URL, RATE_LIMIT_PREFIX: prefix } });
const LIMIT = 600;
let second: { deps: Deps; server: Server } | undefined;

afterAll(async () => {
  if (second) {
    second.server.closeAllConnections();
    await new Promise((r) => second!.server.close(r));
    await second.deps.close();
  }
  await dropRedisPrefix(prefix);
});

/**
 * Sends `count` requests, a few at a time (keep-alive connections), and checks none was refused
 * and that RateLimit-Remaining counted down through every value: the counter is exact.
 */
async function spend(count: number, request: (i: number) => Promise<{ status: number; headers: Headers }>) {
  const remaining: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const res = await request(i);
      if (res.status === 429) throw new Error(`request ${i + 1} of ${count} was refused`);
      remaining.push(Number(res.headers.get('ratelimit-remaining')));
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  expect(remaining.sort((a, b) => b - a)).toEqual(Array.from({ length: count }, (_, i) => LIMIT - 1 - i));
}

async function token() {
  const user = await createUser(t);
  const team = await createTeam(t, user);
  return { user, team, token: await createAccessToken(t, user, team) };
}

describe('request rate per token', () => {
  it('is 600 a minute by default', () => {
    expect(t.config.rateLimit.perMinute).toBe(LIMIT);
  });

  it('sends RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset on every token request, whatever the answer', async () => {
    const bearer = t.agent().withBearer((await token()).token);
    const answers = [
      await bearer.get('/me'),
      await bearer.get('/me/tokens'), // 403 token_not_allowed
      await bearer.get('/no/such/route'), // 404
      await bearer.post('/me/tokens', { purpose: 'x' }), // 403
    ];
    answers.forEach((res, i) => {
      expect(res.headers.get('ratelimit-limit')).toBe(String(LIMIT));
      expect(res.headers.get('ratelimit-remaining')).toBe(String(LIMIT - 1 - i));
      const reset = Number(res.headers.get('ratelimit-reset'));
      expect(reset).toBeGreaterThanOrEqual(1);
      expect(reset).toBeLessThanOrEqual(60);
    });
    expect(answers[1].status).toBe(403);
  });

  it('does not send them to a signed-in browser session', async () => {
    const res = await (await sessionAgent(t, await createUser(t))).get('/me/tokens');
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit-limit')).toBeNull();
  });

  it('answers the 601st request in a minute with 429 rate_limited and Retry-After; another token is unaffected', async () => {
    const { user, team, token: tok } = await token();
    const bearer = t.agent().withBearer(tok);
    await spend(LIMIT, () => bearer.get('/me'));
    const res = await bearer.get('/me');
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe('rate_limited');
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(res.headers.get('ratelimit-remaining')).toBe('0');
    expect(res.headers.get('ratelimit-reset')).toBe(String(retryAfter));
    // Still refused on the next request; the ceiling is per token, not per person or team.
    expect((await bearer.get('/me')).status).toBe(429);
    const sibling = await t
      .agent()
      .withBearer(await createAccessToken(t, user, team))
      .get('/me');
    expect(sibling.status).not.toBe(429);
    expect(sibling.headers.get('ratelimit-remaining')).toBe(String(LIMIT - 1));
  });

  it('counts requests split across two API processes together (Redis)', async () => {
    const deps = await createDeps(t.config, { name: 'second-api' });
    Model.knex(t.deps.knex); // createDeps binds its own knex globally; keep this file's
    second = { deps, server: await startApiServer(deps, 0, '127.0.0.1') };
    const other = new Agent(`http://127.0.0.1:${(second.server.address() as { port: number }).port}/api/vc/v1`);
    const tok = (await token()).token;
    const apis = [t.agent().withBearer(tok), other.withBearer(tok)];
    await spend(LIMIT, (i) => apis[i % 2].get('/me'));
    expect((await apis[0].get('/me')).status).toBe(429);
    expect((await apis[1].get('/me')).status).toBe(429);
  });

  // 304 answers count: the guard counts every token request before any route answers, so a
  // conditional GET answered 304 spends one request like any other.
  it('counts a 304 answer toward the ceiling', async () => {
    const bearer = t.agent().withBearer((await token()).token);
    const first = await bearer.get('/tasks');
    const etag = first.headers.get('etag');
    expect(etag).toBeTruthy();
    const res = await bearer.get('/tasks', { headers: { 'if-none-match': etag! } });
    expect(res.status).toBe(304);
    expect(res.headers.get('ratelimit-remaining')).toBe(String(LIMIT - 2));
  });
});
