import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import type { Agent } from '../../helpers/http';
import type { ReceivedMessage } from '../../helpers/smtp';
import { createUser } from '../../helpers/fixtures';

const t = useTestContext({ smtp: true });

let n = 0;
const uniqueEmail = (tag: string) => `${tag}-${++n}-${Date.now()}@example.test`;
const PASSWORD = 'a long enough password';

function codeFrom(message: ReceivedMessage): string {
  const m = /^Confirmation code: (\S+)$/m.exec(message.text);
  if (!m) throw new Error(`no confirmation code line in:\n${message.text}`);
  return m[1];
}

async function signUp(agent: Agent, email: string, name = 'Ada Lovelace') {
  const res = await agent.post('/signup', { email, password: PASSWORD, name });
  expect(res.status).toBe(201);
  const mail = await t.smtp!.waitFor((m) => m.to.includes(email.toLowerCase()));
  return { user: res.body, code: codeFrom(mail), mail };
}

function cookieHeader(res: { headers: Headers }): string {
  const c = res.headers.getSetCookie().find((h) => h.startsWith('vc_session='));
  if (!c) throw new Error('no vc_session cookie set');
  return c;
}

describe('POST /signup', () => {
  it('creates an unconfirmed account and e-mails a confirmation code', async () => {
    const email = uniqueEmail('new');
    const res = await t.agent().post('/signup', { email, password: PASSWORD, name: 'Ada' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      email,
      name: 'Ada',
      email_confirmed: false,
      created_at: expect.any(String),
    });
    expect(JSON.stringify(res.body)).not.toContain('password');
    const mail = await t.smtp!.waitFor((m) => m.to.includes(email));
    expect(codeFrom(mail)).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}$/);
    expect(mail.subject).not.toContain(codeFrom(mail));
  });

  it('stores only a digest of the code and an argon2id hash of the password', async () => {
    const email = uniqueEmail('digest');
    const { user, code } = await signUp(t.agent(), email);
    const row = await t.deps.knex('email_confirmations').where({ user_id: user.id }).first();
    expect(row.code_digest).toMatch(/^[0-9a-f]{64}$/);
    expect(row.code_digest).not.toContain(code.replace(/-/g, ''));
    expect(new Date(row.expires_at).getTime() - Date.now()).toBeGreaterThan(23.9 * 3600_000);
    const u = await t.deps.knex('users').where({ id: user.id }).first();
    expect(u.password_hash).toMatch(/^\$argon2id\$/);
  });

  it('reports every invalid field at once and creates nothing', async () => {
    const res = await t.agent().post('/signup', { email: 'not-an-address', password: 'short', name: '', extra: 1 });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('invalid');
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['email', 'extra', 'name', 'password']);
    const missing = await t.agent().post('/signup', {});
    expect(Object.keys(missing.body.error.fields).sort()).toEqual(['email', 'name', 'password']);
    expect(await t.deps.knex('users').where({ email: 'not-an-address' }).first()).toBeUndefined();
  });

  it('refuses a password over 200 characters and a name over 100', async () => {
    const res = await t
      .agent()
      .post('/signup', { email: uniqueEmail('long'), password: 'x'.repeat(201), name: 'n'.repeat(101) });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['name', 'password']);
  });

  it('answers 409 on email for an address that has an account, whatever its case', async () => {
    const email = uniqueEmail('dup');
    const { code } = await signUp(t.agent(), email);
    expect((await t.agent().post('/signup/confirm', { code })).status).toBe(200);
    const res = await t.agent().post('/signup', { email: email.toUpperCase(), password: PASSWORD, name: 'Other' });
    expect(res.status).toBe(409);
    expect(res.body.error.fields).toEqual({ email: expect.any(String) });
    const [{ count }] = await t.deps.knex('users').whereRaw('email = ?', [email]).count();
    expect(Number(count)).toBe(1);
  });
});

describe('POST /signup for an address with an unconfirmed sign-up', () => {
  it("does not lock the owner out: the owner's sign-up replaces the squatter's, and only the owner's password works", async () => {
    const email = uniqueEmail('squat');
    const squatter = await t.agent().post('/signup', { email, password: 'the squatters password', name: 'Squatter' });
    expect(squatter.status).toBe(201);
    const squatterMail = await t.smtp!.waitFor((m) => m.to.includes(email));
    const squatterCode = codeFrom(squatterMail);

    const owner = await t.agent().post('/signup', { email, password: PASSWORD, name: 'The Owner' });
    expect(owner.status, owner.text).toBe(201);
    expect(owner.body).toMatchObject({ email, name: 'The Owner', email_confirmed: false });
    const ownerMail = await t.smtp!.waitFor((m) => m.to.includes(email) && codeFrom(m) !== squatterCode);
    expect(ownerMail.text).toContain('The Owner');

    // The code mailed for the squatter's sign-up no longer works.
    const stale = await t.agent().post('/signup/confirm', { code: squatterCode });
    expect(stale.status).toBe(422);
    expect(stale.body.error.fields.code).toBeTruthy();
    const confirmed = await t.agent().post('/signup/confirm', { code: codeFrom(ownerMail) });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body).toMatchObject({ email, name: 'The Owner', email_confirmed: true });
    const users = await t.deps.knex('users').whereRaw('email = ?', [email]);
    expect(users).toHaveLength(1);
    expect((await t.agent().post('/session', { email, password: 'the squatters password' })).status).toBe(401);
    expect((await t.agent().post('/session', { email, password: PASSWORD })).status).toBe(201);
  });

  it('answers the same sign-up sent twice (at once, and again 1 s later) as one: one code e-mail, and it confirms', async () => {
    const email = uniqueEmail('twice');
    const body = { email, password: PASSWORD, name: 'Twice' };
    // a browser sending the POST again because its answer was lost; a double click
    const [a, b] = await Promise.all([t.agent().post('/signup', body), t.agent().post('/signup', body)]);
    expect([a.status, b.status], `${a.text} ${b.text}`).toEqual([201, 201]);
    expect(a.body.id).toBe(b.body.id);
    const mail = await t.smtp!.waitFor((m) => m.to.includes(email));
    await new Promise((r) => setTimeout(r, 1000));
    const again = await t.agent().post('/signup', body);
    expect(again.status, again.text).toBe(201);
    expect(again.body).toEqual(a.body);
    // a second e-mail, were one sent, would be here by now (the first came within the same second)
    await new Promise((r) => setTimeout(r, 500));
    expect(t.smtp!.messages.filter((m) => m.to.includes(email))).toHaveLength(1);
    expect(await t.deps.knex('email_confirmations').where({ user_id: a.body.id })).toHaveLength(1);
    const confirmed = await t.agent().post('/signup/confirm', { code: codeFrom(mail) });
    expect(confirmed.status).toBe(200);
    expect((await t.agent().post('/session', { email, password: PASSWORD })).status).toBe(201);
  });

  it('sends a new code to the same sign-up made again 30 s after its code, and to another password at once', async () => {
    const email = uniqueEmail('later');
    const first = await signUp(t.agent(), email, 'Later');
    await t.deps
      .knex('email_confirmations')
      .where({ user_id: first.user.id })
      .update({ created_at: new Date(Date.now() - 31_000) });
    const again = await t.agent().post('/signup', { email, password: PASSWORD, name: 'Later' });
    expect(again.status).toBe(201);
    const second = await t.smtp!.waitFor((m) => m.to.includes(email) && codeFrom(m) !== first.code);
    const other = await t.agent().post('/signup', { email, password: 'another password entirely', name: 'Later' });
    expect(other.status).toBe(201);
    await t.smtp!.waitFor((m) => m.to.includes(email) && ![first.code, codeFrom(second)].includes(codeFrom(m)));
    expect((await t.agent().post('/signup/confirm', { code: first.code })).status).toBe(422);
    expect((await t.agent().post('/signup/confirm', { code: codeFrom(second) })).status).toBe(422);
  });

  it('confirms with each code only the password of the sign-up it was sent for', async () => {
    const email = uniqueEmail('bound');
    const first = await signUp(t.agent(), email, 'First');
    // A second sign-up replaces the first; a resend then sends the second sign-up's code again.
    const second = await t.agent().post('/signup', { email, password: 'second sign-up password', name: 'Second' });
    expect(second.status).toBe(201);
    const secondMail = await t.smtp!.waitFor((m) => m.to.includes(email) && codeFrom(m) !== first.code);
    expect((await t.agent().post('/signup/resend', { email })).status).toBe(202);
    const resent = await t.smtp!.waitFor(
      (m) => m.to.includes(email) && ![first.code, codeFrom(secondMail)].includes(codeFrom(m)),
    );
    expect((await t.agent().post('/signup/confirm', { code: first.code })).status).toBe(422);
    expect((await t.agent().post('/signup/confirm', { code: codeFrom(resent) })).status).toBe(200);
    // the second sign-up's own first code was still good until the resent one confirmed it
    expect((await t.agent().post('/signup/confirm', { code: codeFrom(secondMail) })).status).toBe(422);
    expect((await t.agent().post('/session', { email, password: PASSWORD })).status).toBe(401);
    expect((await t.agent().post('/session', { email, password: 'second sign-up password' })).status).toBe(201);
  });

  it('sends an address at most five codes an hour: a sixth sign-up is 429 with Retry-After and changes nothing', async () => {
    const email = uniqueEmail('flood');
    for (let i = 0; i < 5; i++) {
      const res = await t.agent().post('/signup', { email, password: `password number ${i}`, name: `N${i}` });
      expect(res.status, res.text).toBe(201);
    }
    const user = await t.deps.knex('users').whereRaw('email = ?', [email]).first();
    const codes = await t.deps.knex('email_confirmations').where({ user_id: user.id }).orderBy('created_at');
    const res = await t.agent().post('/signup', { email, password: 'password number 6', name: 'N6' });
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe('rate_limited');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(3000);
    expect(await t.deps.knex('users').where({ id: user.id }).first()).toEqual(user);
    expect(await t.deps.knex('email_confirmations').where({ user_id: user.id }).orderBy('created_at')).toEqual(codes);
  });

  it('succeeds once that sign-up has expired (24 hours, never confirmed): the stale account and its codes are gone', async () => {
    const email = uniqueEmail('squatted');
    const first = await signUp(t.agent(), email, 'Not The Owner');
    const dayAgo = new Date(Date.now() - 25 * 3600_000);
    await t.deps.knex('users').where({ id: first.user.id }).update({ created_at: dayAgo });
    await t.deps
      .knex('email_confirmations')
      .where({ user_id: first.user.id })
      .update({ created_at: dayAgo, expires_at: new Date(Date.now() - 3600_000) });

    const res = await t.agent().post('/signup', { email, password: PASSWORD, name: 'The Owner' });
    expect(res.status).toBe(201);
    const mail = await t.smtp!.waitFor((m) => m.to.includes(email) && m !== first.mail);
    const owner = { user: res.body, code: codeFrom(mail) };
    expect(owner.user.id).not.toBe(first.user.id);
    expect(await t.deps.knex('users').where({ id: first.user.id }).first()).toBeUndefined();
    expect((await t.agent().post('/signup/confirm', { code: first.code })).status).toBe(422);
    const confirmed = await t.agent().post('/signup/confirm', { code: owner.code });
    expect(confirmed.status).toBe(200);
    expect((await t.agent().post('/session', { email, password: PASSWORD })).status).toBe(201);
  });

  it('still answers 409 for a confirmed account, however old', async () => {
    const user = await createUser(t);
    await t.deps
      .knex('users')
      .where({ id: user.id })
      .update({ created_at: new Date(Date.now() - 90 * 86_400_000) });
    const res = await t.agent().post('/signup', { email: user.email, password: PASSWORD, name: 'Other' });
    expect(res.status).toBe(409);
    expect(res.body.error.fields).toEqual({ email: 'already has an account' });
  });
});

describe('POST /signup/confirm', () => {
  it('confirms the address with the e-mailed code, tolerating lower case and no dashes', async () => {
    const { code } = await signUp(t.agent(), uniqueEmail('confirm'));
    const res = await t.agent().post('/signup/confirm', { code: code.toLowerCase().replace(/-/g, '') });
    expect(res.status).toBe(200);
    expect(res.body.email_confirmed).toBe(true);
  });

  it('answers a confirmation sent again within 30 s of the code’s use as the first, and refuses a used code after that with 422 on code', async () => {
    const { user, code } = await signUp(t.agent(), uniqueEmail('used'));
    const first = await t.agent().post('/signup/confirm', { code });
    expect(first.status).toBe(200);
    // a browser sending the POST again because its answer was lost: the same answer, no failed credential
    const repeat = await t.agent().post('/signup/confirm', { code });
    expect(repeat.status, repeat.text).toBe(200);
    expect(repeat.body).toEqual(first.body);
    await t.deps
      .knex('email_confirmations')
      .where({ user_id: user.id })
      .update({ used_at: new Date(Date.now() - 31_000) });
    const again = await t.agent().post('/signup/confirm', { code });
    expect(again.status).toBe(422);
    expect(Object.keys(again.body.error.fields)).toEqual(['code']);
  });

  it('refuses a wrong code and an expired code with 422 on code', async () => {
    const { user, code } = await signUp(t.agent(), uniqueEmail('expired'));
    const wrong = await t.agent().post('/signup/confirm', { code: 'CCCC-CCCC-CCCC' });
    expect(wrong.status).toBe(422);
    expect(wrong.body.error.fields.code).toBeTruthy();
    await t.deps
      .knex('email_confirmations')
      .where({ user_id: user.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    const expired = await t.agent().post('/signup/confirm', { code });
    expect(expired.status).toBe(422);
    expect(expired.body.error.fields.code).toBeTruthy();
    expect((await t.deps.knex('users').where({ id: user.id }).first()).email_confirmed_at).toBeNull();
  });
});

describe('POST /signup/resend', () => {
  it('sends a fresh code to an unconfirmed account; the earlier codes work too, until one of them confirms', async () => {
    const email = uniqueEmail('resend');
    const first = await signUp(t.agent(), email);
    // pressed twice: both codes arrive, and the owner may type whichever e-mail they open
    expect((await t.agent().post('/signup/resend', { email })).status).toBe(202);
    const second = codeFrom(await t.smtp!.waitFor((m) => m.to.includes(email) && codeFrom(m) !== first.code));
    expect((await t.agent().post('/signup/resend', { email })).status).toBe(202);
    const third = codeFrom(
      await t.smtp!.waitFor((m) => m.to.includes(email) && ![first.code, second].includes(codeFrom(m))),
    );
    const live = await t.deps
      .knex('email_confirmations')
      .where({ user_id: first.user.id })
      .whereNull('used_at')
      .where('expires_at', '>', new Date());
    expect(live).toHaveLength(3);
    const confirmed = await t.agent().post('/signup/confirm', { code: second });
    expect(confirmed.status, confirmed.text).toBe(200);
    expect(confirmed.body.email_confirmed).toBe(true);
    expect((await t.agent().post('/session', { email, password: PASSWORD })).status).toBe(201);
    // the others have done their work: each is now a code that does not work
    for (const code of [first.code, third]) {
      const res = await t.agent().post('/signup/confirm', { code });
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.error.fields)).toEqual(['code']);
    }
  });

  it('answers 202 for an unknown address and sends nothing', async () => {
    const email = uniqueEmail('nobody');
    const res = await t.agent().post('/signup/resend', { email });
    expect(res.status).toBe(202);
    // A marker message sent after it arrives after anything the resend could have sent.
    const marker = uniqueEmail('marker');
    await signUp(t.agent(), marker);
    expect(t.smtp!.messages.some((m) => m.to.includes(email))).toBe(false);
  });
});

describe('sign-up to sign-out', () => {
  it('signs up, confirms from the e-mail, signs in with a cookie, writes with CSRF, and signs out', async () => {
    const email = uniqueEmail('journey');
    const browser = t.agent();
    const { code } = await signUp(browser, email);

    const early = await browser.post('/session', { email, password: PASSWORD });
    expect(early.status).toBe(403);
    expect(early.body.error.code).toBe('email_not_confirmed');

    expect((await browser.post('/signup/confirm', { code })).status).toBe(200);

    const signIn = await browser.post('/session', { email: email.toUpperCase(), password: PASSWORD });
    expect(signIn.status).toBe(201);
    expect(signIn.body.user).toMatchObject({ email, email_confirmed: true });
    const cookie = cookieHeader(signIn);
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Lax/);
    expect(cookie).toMatch(/; Path=\//);
    expect(cookie).not.toMatch(/Secure/); // plain http test server
    const secret = browser.cookies.get('vc_session')!;
    const row = await t.deps.knex('sessions').where({ kind: 'browser' }).orderBy('created_at', 'desc').first();
    expect(row.secret_digest).not.toBe(secret);
    expect(JSON.stringify(await t.deps.knex('sessions'))).not.toContain(secret);

    expect((await browser.get('/me')).body).toMatchObject({ email, via: 'session' });

    const refused = await browser.post('/me/ssh-keys', { name: 'x', public_key: 'x' });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('forbidden');

    const token = await browser.get('/session/token');
    expect(token.status).toBe(200);
    browser.csrf = token.body.token;
    const wrongToken = await browser.post(
      '/me/ssh-keys',
      { name: 'x', public_key: 'x' },
      { headers: { 'x-csrf-token': 'nope' } },
    );
    expect(wrongToken.status).toBe(403);
    const accepted = await browser.post('/me/ssh-keys', { name: 'x', public_key: 'x' });
    expect(accepted.status).toBe(422); // past CSRF, on to validation

    const out = await browser.delete('/session');
    expect(out.status).toBe(204);
    expect(browser.cookies.has('vc_session')).toBe(false);
    const stale = t.agent();
    stale.cookies.set('vc_session', secret);
    expect((await stale.get('/me')).status).toBe(401);
  });

  it('gives a new session id at every sign-in and ends the one the browser had', async () => {
    const user = await createUser(t, { email: uniqueEmail('twice') });
    const browser = t.agent();
    const first = await browser.post('/session', { email: user.email, password: 'correct horse battery staple' });
    expect(first.status).toBe(201);
    const firstSecret = browser.cookies.get('vc_session')!;
    const second = await browser.post('/session', { email: user.email, password: 'correct horse battery staple' });
    expect(second.status).toBe(201);
    const secondSecret = browser.cookies.get('vc_session')!;
    expect(secondSecret).not.toBe(firstSecret);
    const rows = await t.deps.knex('sessions').where({ user_id: user.id }).orderBy('created_at');
    expect(rows).toHaveLength(2);
    expect(rows[0].id).not.toBe(rows[1].id);
    expect(rows[0].ended_at).not.toBeNull();
    expect(rows[1].ended_at).toBeNull();
  });
});
