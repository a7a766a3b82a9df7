import { describe, expect, it } from 'vitest';
import { AccessToken } from '../../../db/models/access-token';
import { Session } from '../../../db/models/session';
import { generateSecret, randomToken, sessionDigest, tokenDigest } from '../../../api/lib/token-format';
import { useTestContext } from '../../helpers/context';
import { createAccessToken, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';

const t = useTestContext();
const DAY = 86_400_000;

async function signedIn() {
  const user = await createUser(t);
  const team = await createTeam(t, user);
  const agent = await sessionAgent(t, user);
  return { user, team, agent };
}

describe('POST /me/tokens', () => {
  it("issues a token for one of the caller's teams and shows its string once", async () => {
    const { team, agent } = await signedIn();
    const res = await agent.post('/me/tokens', {
      purpose: 'GitHub Actions deploy',
      team_id: team.id,
      expires_in_days: 30,
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(Object.keys(res.body).sort()).toEqual(
      ['created_at', 'expires_at', 'id', 'last_used_at', 'purpose', 'revoked_at', 'status', 'team_id', 'token'].sort(),
    );
    expect(res.body).toMatchObject({
      purpose: 'GitHub Actions deploy',
      team_id: team.id,
      status: 'active',
      last_used_at: null,
      revoked_at: null,
    });
    expect(res.body.token).toMatch(/^vcp_[0-9A-Za-z]{36}$/);
    expect(Date.parse(res.body.expires_at) - Date.parse(res.body.created_at)).toBe(30 * DAY);
  });

  it('keeps only the keyed digest and the key id, never the string', async () => {
    const { team, agent } = await signedIn();
    const res = await agent.post('/me/tokens', { purpose: 'ci', team_id: team.id, expires_in_days: 7 });
    const row = await t.deps.knex('access_tokens').where({ id: res.body.id }).first();
    expect(row.digest).toBe(tokenDigest(res.body.token, t.deps.secrets.tokenKey.key));
    expect(row.key_id).toBe(t.deps.secrets.tokenKey.id);
    expect(JSON.stringify(row)).not.toContain(res.body.token.slice(4));
  });

  it('gives a token that works as a bearer', async () => {
    const { team, agent } = await signedIn();
    const { body } = await agent.post('/me/tokens', { purpose: 'ci', team_id: team.id, expires_in_days: 7 });
    // A session-only route tells a working token apart from one that does not work (401).
    const res = await t.agent().withBearer(body.token).get('/me/tokens');
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('token_not_allowed');
  });

  it.each([7, 30, 90])('accepts expires_in_days %i and sets expires_at that many days after issue', async (days) => {
    const { team, agent } = await signedIn();
    const res = await agent.post('/me/tokens', { purpose: 'ci', team_id: team.id, expires_in_days: days });
    expect(res.status).toBe(201);
    expect(Date.parse(res.body.expires_at) - Date.parse(res.body.created_at)).toBe(days * DAY);
  });

  it.each([0, 1, 8, 31, 365, -7, 7.5, '30', null, undefined])(
    'refuses expires_in_days %s with 422 naming the field',
    async (days) => {
      const { user, team, agent } = await signedIn();
      const res = await agent.post('/me/tokens', { purpose: 'ci', team_id: team.id, expires_in_days: days });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('invalid');
      expect(Object.keys(res.body.error.fields)).toEqual(['expires_in_days']);
      expect(await AccessToken.query(t.deps.knex).where('user_id', user.id).resultSize()).toBe(0);
    },
  );

  it.each(['', '   ', 'x'.repeat(101), 'tab\there'])(
    'refuses purpose %j with 422 naming the field',
    async (purpose) => {
      const { team, agent } = await signedIn();
      const res = await agent.post('/me/tokens', { purpose, team_id: team.id, expires_in_days: 7 });
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.fields)).toEqual(['purpose']);
    },
  );

  it('accepts a purpose of 100 characters', async () => {
    const { team, agent } = await signedIn();
    const res = await agent.post('/me/tokens', { purpose: 'p'.repeat(100), team_id: team.id, expires_in_days: 7 });
    expect(res.status).toBe(201);
    expect(res.body.purpose).toBe('p'.repeat(100));
  });

  it('refuses a team the caller is not a member of exactly like a team that does not exist', async () => {
    const { user, agent } = await signedIn();
    const other = await createTeam(t, await createUser(t));
    const foreign = await agent.post('/me/tokens', { purpose: 'ci', team_id: other.id, expires_in_days: 7 });
    const missing = await agent.post('/me/tokens', { purpose: 'ci', team_id: crypto.randomUUID(), expires_in_days: 7 });
    expect(foreign.status).toBe(422);
    expect(foreign.body.error.fields).toEqual({ team_id: expect.any(String) });
    expect(missing.status).toBe(422);
    expect(missing.body).toEqual(foreign.body);
    expect(await AccessToken.query(t.deps.knex).where('user_id', user.id).resultSize()).toBe(0);
  });

  it('reports every failing field and unknown fields at once', async () => {
    const { agent } = await signedIn();
    const res = await agent.post('/me/tokens', { purpose: '', team_id: 'nope', expires_in_days: 1, scopes: ['read'] });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['expires_in_days', 'purpose', 'scopes', 'team_id']);
  });

  it('refuses a personal access token with 403 token_not_allowed and issues nothing', async () => {
    const { user, team } = await signedIn();
    const token = await createAccessToken(t, user, team);
    const res = await t
      .agent()
      .withBearer(token)
      .post('/me/tokens', { purpose: 'more', team_id: team.id, expires_in_days: 90 });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('token_not_allowed');
    expect(await AccessToken.query(t.deps.knex).where('user_id', user.id).resultSize()).toBe(1);
  });

  it('is open to the command-line sign-in (vcs_ bearer)', async () => {
    const { user, team } = await signedIn();
    const secret = generateSecret('vcs_');
    await Session.query(t.deps.knex).insert({
      secret_digest: sessionDigest(secret),
      user_id: user.id,
      kind: 'cli',
      csrf_token: randomToken(),
      expires_at: new Date(Date.now() + DAY),
    });
    const res = await t
      .agent()
      .withBearer(secret)
      .post('/me/tokens', { purpose: 'from cli', team_id: team.id, expires_in_days: 90 });
    expect(res.status).toBe(201);
  });

  it('answers 401 without a signed-in caller', async () => {
    const res = await t.agent().post('/me/tokens', { purpose: 'ci', team_id: crypto.randomUUID(), expires_in_days: 7 });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('unauthenticated');
  });
});

describe('GET /me/tokens', () => {
  it("lists the caller's tokens newest first with their computed status, revoked and expired included", async () => {
    const { user, team, agent } = await signedIn();
    const first = (await agent.post('/me/tokens', { purpose: 'first', team_id: team.id, expires_in_days: 7 })).body;
    const second = (await agent.post('/me/tokens', { purpose: 'second', team_id: team.id, expires_in_days: 30 })).body;
    const third = (await agent.post('/me/tokens', { purpose: 'third', team_id: team.id, expires_in_days: 90 })).body;
    await AccessToken.query(t.deps.knex)
      .findById(first.id)
      .patch({ expires_at: new Date(Date.now() - 1000) });
    await agent.delete(`/me/tokens/${second.id}`);
    await createAccessToken(t, await createUser(t), team); // someone else's token in the same team

    const res = await agent.get('/me/tokens');
    expect(res.status).toBe(200);
    expect(res.body.data.map((x: { purpose: string; status: string }) => [x.purpose, x.status])).toEqual([
      ['third', 'active'],
      ['second', 'revoked'],
      ['first', 'expired'],
    ]);
    expect(res.body.data[0]).toEqual({ ...third, token: undefined, last_used_at: null });
    void user;
  });

  it('never shows a token string, digest or key id', async () => {
    const { team, agent } = await signedIn();
    const issued = (await agent.post('/me/tokens', { purpose: 'ci', team_id: team.id, expires_in_days: 7 })).body;
    const res = await agent.get('/me/tokens');
    expect(Object.keys(res.body.data[0]).sort()).toEqual(
      ['created_at', 'expires_at', 'id', 'last_used_at', 'purpose', 'revoked_at', 'status', 'team_id'].sort(),
    );
    expect(res.text).not.toContain(issued.token.slice(4));
    expect(res.text).not.toMatch(/digest|key_id/);
  });

  it('shows a token as expired from the second it expires, and the token stops working then', async () => {
    const { team, agent } = await signedIn();
    const issued = (await agent.post('/me/tokens', { purpose: 'ci', team_id: team.id, expires_in_days: 7 })).body;
    const bearer = t.agent().withBearer(issued.token);
    await AccessToken.query(t.deps.knex)
      .findById(issued.id)
      .patch({ expires_at: new Date(Date.now() + 60_000) });
    expect((await agent.get('/me/tokens')).body.data[0].status).toBe('active');
    expect((await bearer.get('/me/tokens')).body.error.code).toBe('token_not_allowed');

    await AccessToken.query(t.deps.knex).findById(issued.id).patch({ expires_at: new Date() });
    expect((await agent.get('/me/tokens')).body.data[0].status).toBe('expired');
    const res = await bearer.get('/me/tokens');
    expect(res.status).toBe(401);
  });

  it('answers a personal access token with 403 token_not_allowed', async () => {
    const { user, team } = await signedIn();
    const res = await t
      .agent()
      .withBearer(await createAccessToken(t, user, team))
      .get('/me/tokens');
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('token_not_allowed');
  });
});

describe('DELETE /me/tokens/{id}', () => {
  it('revokes the token: 200 with the record, it stops working and stays in the list', async () => {
    const { team, agent } = await signedIn();
    const issued = (await agent.post('/me/tokens', { purpose: 'ci', team_id: team.id, expires_in_days: 7 })).body;
    const res = await agent.delete(`/me/tokens/${issued.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: issued.id, purpose: 'ci', status: 'revoked' });
    expect(Date.parse(res.body.revoked_at)).toBeGreaterThan(Date.now() - 60_000);
    expect(res.body.token).toBeUndefined();
    expect((await t.agent().withBearer(issued.token).get('/me/tokens')).status).toBe(401);
    expect((await agent.get('/me/tokens')).body.data).toEqual([res.body]);
  });

  it('answers 200 with the record unchanged when the token is already revoked', async () => {
    const { team, agent } = await signedIn();
    const issued = (await agent.post('/me/tokens', { purpose: 'ci', team_id: team.id, expires_in_days: 7 })).body;
    const once = await agent.delete(`/me/tokens/${issued.id}`);
    const twice = await agent.delete(`/me/tokens/${issued.id}`);
    expect(twice.status).toBe(200);
    expect(twice.body).toEqual(once.body);
  });

  it("answers 404 for another user's token and leaves it working", async () => {
    const { agent } = await signedIn();
    const other = await signedIn();
    const issued = (
      await other.agent.post('/me/tokens', { purpose: 'theirs', team_id: other.team.id, expires_in_days: 7 })
    ).body;
    const res = await agent.delete(`/me/tokens/${issued.id}`);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
    expect((await other.agent.get('/me/tokens')).body.data[0].status).toBe('active');
    expect((await t.agent().withBearer(issued.token).get('/me/tokens')).body.error.code).toBe('token_not_allowed');
  });

  it('answers 404 for an id that cannot name a token', async () => {
    const { agent } = await signedIn();
    expect((await agent.delete('/me/tokens/not-a-uuid')).status).toBe(404);
    expect((await agent.delete(`/me/tokens/${crypto.randomUUID()}`)).status).toBe(404);
  });

  it('answers a personal access token with 403 token_not_allowed, even for itself', async () => {
    const { user, team, agent } = await signedIn();
    const token = await createAccessToken(t, user, team);
    const [row] = (await agent.get('/me/tokens')).body.data;
    const res = await t.agent().withBearer(token).delete(`/me/tokens/${row.id}`);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('token_not_allowed');
    expect((await agent.get('/me/tokens')).body.data[0].status).toBe('active');
  });
});

describe('last_used_at', () => {
  it('is written at the first use and at most once a minute after that', async () => {
    const { team, agent } = await signedIn();
    const issued = (await agent.post('/me/tokens', { purpose: 'ci', team_id: team.id, expires_in_days: 7 })).body;
    const bearer = t.agent().withBearer(issued.token);
    const lastUsed = async () => (await agent.get('/me/tokens')).body.data[0].last_used_at as string | null;

    expect(await lastUsed()).toBeNull();
    await bearer.get('/me');
    const first = await lastUsed();
    expect(Date.parse(first!)).toBeGreaterThan(Date.now() - 60_000);

    await bearer.get('/me');
    await bearer.get('/me/tokens');
    expect(await lastUsed()).toBe(first);

    // A minute later (moved back in the database), the next use writes it again.
    const aMinuteAgo = new Date(Date.parse(first!) - 61_000);
    await AccessToken.query(t.deps.knex).findById(issued.id).patch({ last_used_at: aMinuteAgo });
    await bearer.get('/me');
    const second = await lastUsed();
    expect(Date.parse(second!)).toBeGreaterThan(Date.parse(first!) - 1000);
    expect(second).not.toBe(aMinuteAgo.toISOString());
  });
});
