import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { PASSWORD, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';

const t = useTestContext();

describe('a NUL character (U+0000) in any text field', () => {
  it('POST /session: 422 on email (PostgreSQL refuses NUL in text; it must never get there)', async () => {
    const res = await t.agent().post('/session', { email: 'ada@example.com\u0000', password: PASSWORD });
    expect(res.status).toBe(422);
    expect(res.body.error.fields).toEqual({ email: expect.stringMatching(/NUL/) });
  });

  it('POST /signup: 422 on each field that holds one, and no account is made', async () => {
    const res = await t
      .agent()
      .post('/signup', { email: 'nul@example.com', password: 'a long\u0000passphrase', name: 'N\u0000' });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['name', 'password']);
    expect(await t.deps.knex('users').where({ email: 'nul@example.com' }).first()).toBeUndefined();
  });

  it('POST /teams/{id}/settings and a query parameter: 422 on the field, nothing changed', async () => {
    const owner = await createUser(t);
    const team = await createTeam(t, owner, 'Nul Team');
    const agent = await sessionAgent(t, owner);
    const res = await agent.post(`/teams/${team.id}/settings`, { name: 'x\u0000y' });
    expect(res.status).toBe(422);
    expect(res.body.error.fields).toMatchObject({ name: expect.stringMatching(/NUL/) });
    expect((await t.deps.knex('teams').where({ id: team.id }).first()).name).toBe('Nul Team');
    const query = await agent.get(`/cli/verify?user_code=${encodeURIComponent('ABCD\u0000')}`);
    expect(query.status).toBe(422);
    expect(query.body.error.fields).toEqual({ user_code: expect.stringMatching(/NUL/) });
  });
});

describe('X-Content-Type-Options: nosniff', () => {
  it('is on every answer: JSON, errors, the docs page and the device page', async () => {
    const user = await createUser(t);
    const agent = await sessionAgent(t, user);
    const answers = await Promise.all([
      agent.get('/me'),
      t.agent().get('/me'),
      t.agent().get('/no-such-route'),
      t.agent().get('/docs'),
      t.agent().get('/openapi.json'),
      agent.get('/cli/verify'),
      t.agent().get('/health'),
    ]);
    expect(answers.map((r) => r.status)).toEqual([200, 401, 404, 200, 200, 200, 200]);
    for (const r of answers) expect(r.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
