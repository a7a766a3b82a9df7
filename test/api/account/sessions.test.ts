import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { PASSWORD, createAccessToken, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import type { User } from '../../../db/models/user';

const t = useTestContext();

/** Signs in through HTTP and returns a browser agent with its CSRF token. */
async function signIn(user: User) {
  const agent = t.agent();
  const res = await agent.post('/session', { email: user.email, password: PASSWORD });
  expect(res.status).toBe(201);
  agent.csrf = (await agent.get('/session/token')).body.token;
  return agent;
}

describe('POST /session', () => {
  it('answers a wrong password and an unknown address alike with 401 unauthenticated', async () => {
    const user = await createUser(t);
    const wrong = await t.agent().post('/session', { email: user.email, password: 'not the password at all' });
    const unknown = await t
      .agent()
      .post('/session', { email: `nobody-${Date.now()}@example.test`, password: PASSWORD });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body.error.code).toBe('unauthenticated');
    expect(wrong.body.error.message).toBe(unknown.body.error.message);
    expect(wrong.headers.getSetCookie()).toEqual([]);
  });

  it('reports both missing fields at once', async () => {
    const res = await t.agent().post('/session', {});
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['email', 'password']);
  });
});

describe('GET /session/token', () => {
  it('gives the browser session its CSRF token and refuses callers without a session', async () => {
    const user = await createUser(t);
    const agent = await signIn(user);
    const res = await agent.get('/session/token');
    expect(res.status).toBe(200);
    const row = await t.deps.knex('sessions').where({ user_id: user.id }).first();
    expect(res.body).toEqual({ token: row.csrf_token });
    expect((await t.agent().get('/session/token')).status).toBe(401);
  });
});

describe('DELETE /session', () => {
  it('needs the CSRF header from a browser', async () => {
    const agent = await signIn(await createUser(t));
    const res = await agent.delete('/session', undefined, { noCsrf: true });
    expect(res.status).toBe(403);
    expect((await agent.get('/me')).status).toBe(200);
  });
});

describe('POST /session/reauthenticate', () => {
  it('refuses a wrong password with 422 on password and leaves the sign-in time', async () => {
    const user = await createUser(t);
    const agent = await signIn(user);
    const before = (await t.deps.knex('sessions').where({ user_id: user.id }).first()).authenticated_at;
    const res = await agent.post('/session/reauthenticate', { password: 'wrong password here' });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields)).toEqual(['password']);
    const after = (await t.deps.knex('sessions').where({ user_id: user.id }).first()).authenticated_at;
    expect(after.getTime()).toBe(before.getTime());
  });
});

describe('POST /users/{id}/sessions/end-others', () => {
  it('asks an old sign-in to reauthenticate, then ends every other browser session and no command-line session', async () => {
    const user = await createUser(t);
    const current = await signIn(user);
    const otherBrowser = await signIn(user);
    await t.deps.knex('sessions').insert({
      secret_digest: 'f'.repeat(64),
      user_id: user.id,
      kind: 'cli',
      csrf_token: 'unused',
      expires_at: new Date(Date.now() + 86_400_000),
    });
    // The current sign-in happened two hours ago.
    const currentRow = await t.deps
      .knex('sessions')
      .where({ user_id: user.id, kind: 'browser' })
      .orderBy('created_at')
      .first();
    await t.deps
      .knex('sessions')
      .where({ id: currentRow.id })
      .update({ authenticated_at: new Date(Date.now() - 2 * 3600_000) });

    const refused = await current.post(`/users/${user.id}/sessions/end-others`);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('reauthentication_required');
    expect((await otherBrowser.get('/me')).status).toBe(200);

    const re = await current.post('/session/reauthenticate', { password: PASSWORD });
    expect(re.status).toBe(200);
    expect(Date.now() - new Date(re.body.authenticated_at).getTime()).toBeLessThan(60_000);

    const ended = await current.post(`/users/${user.id}/sessions/end-others`);
    expect(ended.status).toBe(200);
    expect(ended.body).toEqual({ ended: 1 });
    expect((await otherBrowser.get('/me')).status).toBe(401);
    expect((await current.get('/me')).status).toBe(200);
    const live = await t.deps.knex('sessions').where({ user_id: user.id }).whereNull('ended_at').orderBy('kind');
    expect(live.map((s) => [s.kind, s.id === currentRow.id])).toEqual([
      ['browser', true],
      ['cli', false],
    ]);
  });

  it("answers 404 for another user's id and ends nothing", async () => {
    const user = await createUser(t);
    const other = await createUser(t);
    const otherAgent = await signIn(other);
    const agent = await signIn(user);
    const res = await agent.post(`/users/${other.id}/sessions/end-others`);
    expect(res.status).toBe(404);
    expect((await otherAgent.get('/me')).status).toBe(200);
  });
});

describe('GET /me', () => {
  it('shows the signed-in user and how they came in', async () => {
    const user = await createUser(t, { name: 'Grace' });
    const res = await (await sessionAgent(t, user)).get('/me');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: user.id,
      email: user.email,
      name: 'Grace',
      email_confirmed: true,
      created_at: user.created_at.toISOString(),
      via: 'session',
    });
  });

  it('shows a personal access token its record but never the string', async () => {
    const user = await createUser(t);
    const team = await createTeam(t, user);
    const token = await createAccessToken(t, user, team, 7, 'deploy bot');
    const res = await t.agent().withBearer(token).get('/me');
    expect(res.status).toBe(200);
    expect(res.body.via).toBe('token');
    expect(res.body.token).toEqual({
      id: expect.any(String),
      team_id: team.id,
      purpose: 'deploy bot',
      expires_at: expect.any(String),
    });
    expect(res.text).not.toContain(token);
  });

  it('answers 401 without credentials', async () => {
    const res = await t.agent().get('/me');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('unauthenticated');
  });
});

describe('account routes and tokens', () => {
  it('refuse a personal access token on session-only account routes', async () => {
    const user = await createUser(t);
    const token = await createAccessToken(t, user, await createTeam(t, user));
    const agent = t.agent().withBearer(token);
    for (const [method, path] of [
      ['GET', '/me/ssh-keys'],
      ['POST', '/me/ssh-keys'],
      ['GET', '/session/token'],
      ['DELETE', '/session'],
      ['POST', '/session/reauthenticate'],
      ['POST', `/users/${user.id}/sessions/end-others`],
      ['POST', '/cli/sessions/approve'],
    ]) {
      const res = await agent.request(method, path, { body: method === 'POST' ? {} : undefined });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.error.code, `${method} ${path}`).toBe('token_not_allowed');
    }
  });
});
