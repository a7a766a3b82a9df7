import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createTeam, createUser, sessionAgent } from '../../helpers/fixtures';

/**
 * Idempotency-Key on a write that starts no task (api/lib/idempotency.ts): a repeat under the same key answers
 * what the first answered, and changes nothing again. The console sends one with every write, so a POST that the
 * browser sends again by itself (its answer lost) creates one thing.
 */
const t = useTestContext({ smtp: true });
const count = async (q: { count(c: Record<string, string>): Promise<Array<{ n: unknown }>> }) =>
  Number((await q.count({ n: '*' }))[0].n);

async function signedIn() {
  const user = await createUser(t);
  const team = await createTeam(t, user);
  return { user, team, agent: await sessionAgent(t, user) };
}

const keyed = (key: string) => ({ headers: { 'idempotency-key': key } });

describe('Idempotency-Key on a write that starts no task', () => {
  it('answers a repeated token creation with the first answer, its string included, and issues one token', async () => {
    const { user, team, agent } = await signedIn();
    const key = randomUUID();
    const body = { purpose: `ci ${key}`, team_id: team.id, expires_in_days: 7 };
    const first = await agent.post('/me/tokens', body, keyed(key));
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await agent.post('/me/tokens', body, keyed(key));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('cache-control')).toBe('no-store');
    expect(again.body).toEqual(first.body);
    expect(await count(t.deps.knex('access_tokens').where({ user_id: user.id, purpose: body.purpose }))).toBe(1);
    // kept sealed: neither the token's string nor the request's body is readable in the row
    const row = await t.deps.knex('idempotency_keys').where({ user_id: user.id, key }).first();
    expect(row.answer_sealed).toMatch(/^v1\./);
    expect(JSON.stringify(row)).not.toContain(first.body.token.slice(4));
    expect(JSON.stringify(row)).not.toContain(body.purpose);
  });

  it('sends one invitation e-mail for two identical requests sent at once', async () => {
    const { team, agent } = await signedIn();
    const email = `invited-${randomUUID()}@example.test`;
    const key = randomUUID();
    const [a, b] = await Promise.all(
      [1, 2].map(() => agent.post(`/teams/${team.id}/invitations`, { email, role: 'developer' }, keyed(key))),
    );
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.id).toBe(b.body.id);
    expect([a, b].filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(1);
    expect(await count(t.deps.knex('invitations').where({ team_id: team.id, email }))).toBe(1);
    await t.smtp!.waitFor((m) => m.to.includes(email));
    // a second e-mail, were one sent, would have come with the first
    await new Promise((r) => setTimeout(r, 500));
    expect(t.smtp!.messages.filter((m) => m.to.includes(email))).toHaveLength(1);
  });

  it('answers a repeated DELETE 204 where an unkeyed one is 409', async () => {
    const { team, agent } = await signedIn();
    const invite = async () =>
      (await agent.post(`/teams/${team.id}/invitations`, { email: `x-${randomUUID()}@example.test`, role: 'viewer' }))
        .body.id as string;
    const [a, b] = [await invite(), await invite()];
    const key = randomUUID();
    expect((await agent.delete(`/invitations/${a}`, undefined, keyed(key))).status).toBe(204);
    const again = await agent.delete(`/invitations/${a}`, undefined, keyed(key));
    expect(again.status).toBe(204);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await agent.delete(`/invitations/${b}`)).status).toBe(204);
    const unkeyed = await agent.delete(`/invitations/${b}`);
    expect(unkeyed.status).toBe(409);
    expect(unkeyed.body.error.code).toBe('invitation_not_open');
  });

  it('refuses the same key with another request with 422 on Idempotency-Key, changing nothing', async () => {
    const { user, team, agent } = await signedIn();
    const key = randomUUID();
    expect(
      (await agent.post('/me/tokens', { purpose: 'one', team_id: team.id, expires_in_days: 7 }, keyed(key))).status,
    ).toBe(201);
    const other = await agent.post('/me/tokens', { purpose: 'two', team_id: team.id, expires_in_days: 7 }, keyed(key));
    expect(other.status).toBe(422);
    expect(Object.keys(other.body.error.fields)).toEqual(['Idempotency-Key']);
    expect(await count(t.deps.knex('access_tokens').where({ user_id: user.id, purpose: 'two' }))).toBe(0);
  });

  it('takes a key back after 24 hours: the same key then starts a new request, and another caller’s old key stays', async () => {
    const { user, team, agent } = await signedIn();
    const other = await signedIn();
    const key = randomUUID();
    const token = (purpose: string) => ({ purpose, team_id: team.id, expires_in_days: 7 });
    expect((await agent.post('/me/tokens', token('first'), keyed(key))).status).toBe(201);
    expect(
      (
        await other.agent.post(
          '/me/tokens',
          { purpose: 'theirs', team_id: other.team.id, expires_in_days: 7 },
          keyed(key),
        )
      ).status,
    ).toBe(201);
    const age = (userId: string) =>
      t.deps
        .knex('idempotency_keys')
        .where({ user_id: userId, key })
        .update({ created_at: t.deps.knex.raw("now() - interval '25 hours'") });
    await age(user.id);
    await age(other.user.id);
    // another request under the old key is no longer refused: the key is new again
    const later = await agent.post('/me/tokens', token('second'), keyed(key));
    expect(later.status).toBe(201);
    expect(later.headers.get('idempotent-replayed')).toBeNull();
    expect(await count(t.deps.knex('access_tokens').where({ user_id: user.id, purpose: 'second' }))).toBe(1);
    // the table-wide prune is the daily schedule's (test/workflows/prune-expired.test.ts), not a request's
    expect(await count(t.deps.knex('idempotency_keys').where({ user_id: other.user.id, key }))).toBe(1);
  });

  it('answers a write that was made even when its key cannot be recorded done, and keeps the key from making it twice', async () => {
    const { user, team, agent } = await signedIn();
    const { knex } = t.deps;
    // the database refuses to record this key's answer (as when it fails between the write and that record)
    await knex.raw(`CREATE OR REPLACE FUNCTION refuse_idempotency_done() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'refused by the test'; END $$`);
    await knex.raw(`CREATE TRIGGER refuse_idempotency_done BEFORE UPDATE ON idempotency_keys FOR EACH ROW
      WHEN (NEW.key LIKE 'refuse-%') EXECUTE FUNCTION refuse_idempotency_done()`);
    try {
      const key = `refuse-${randomUUID()}`;
      const body = { purpose: `made ${key}`, team_id: team.id, expires_in_days: 7 };
      const res = await agent.post('/me/tokens', body, keyed(key));
      expect(res.status, res.text).toBe(201);
      expect(res.body.token).toMatch(/^vcp_/);
      const me = await fetch(`${t.apiUrl}/me`, { headers: { authorization: `Bearer ${res.body.token}` } });
      expect(me.status).toBe(200);
      expect(await count(knex('access_tokens').where({ user_id: user.id, purpose: body.purpose }))).toBe(1);
      // the key stays held: a repeat would wait on it (409 idempotency_key_in_use), not issue a second token
      expect((await knex('idempotency_keys').where({ user_id: user.id, key }).first()).status).toBe('pending');
    } finally {
      await knex.raw('DROP TRIGGER refuse_idempotency_done ON idempotency_keys');
    }
  });

  it('gives the key back when the write is refused, and another caller’s key is its own', async () => {
    const { user, team, agent } = await signedIn();
    const key = randomUUID();
    const refused = await agent.post('/me/tokens', { purpose: '', team_id: team.id, expires_in_days: 7 }, keyed(key));
    expect(refused.status).toBe(422);
    expect(await count(t.deps.knex('idempotency_keys').where({ user_id: user.id, key }))).toBe(0);
    const ok = await agent.post('/me/tokens', { purpose: 'later', team_id: team.id, expires_in_days: 7 }, keyed(key));
    expect(ok.status).toBe(201);
    const someoneElse = await signedIn();
    const theirs = await someoneElse.agent.post(
      '/me/tokens',
      { purpose: 'later', team_id: someoneElse.team.id, expires_in_days: 7 },
      keyed(key),
    );
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.body.id).not.toBe(ok.body.id);
  });

  it('is documented on every signed-in write but uploads, and not on signing in', async () => {
    const doc = (await t.agent().get('/openapi.json')).body;
    const named = (op: { parameters?: Array<{ name: string }> }) =>
      (op.parameters ?? []).some((p) => p.name === 'Idempotency-Key');
    expect(named(doc.paths['/me/tokens'].post)).toBe(true);
    expect(named(doc.paths['/me/tokens/{id}'].delete)).toBe(true);
    expect(named(doc.paths['/session'].post)).toBe(false);
    const writes = Object.values(
      doc.paths as Record<
        string,
        Record<
          string,
          {
            security?: unknown[];
            requestBody?: { content: Record<string, unknown> };
            parameters?: Array<{ name: string }>;
          }
        >
      >,
    )
      .flatMap((item) => Object.entries(item).filter(([m]) => ['post', 'put', 'patch', 'delete'].includes(m)))
      .map(([, op]) => op)
      .filter((op) => (op.security ?? []).length > 0 && !('gitHookSignature' in ((op.security ?? [])[0] as object)))
      .filter((op) => !op.requestBody?.content['multipart/form-data']);
    expect(writes.length).toBeGreaterThan(60);
    expect(writes.filter((op) => !named(op))).toEqual([]);
  });
});
