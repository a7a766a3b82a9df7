import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createUser, sessionAgent } from '../../helpers/fixtures';
import { sha256Hex as sha256 } from '../../../api/lib/token-format';

const t = useTestContext();

const USER_CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;

async function start() {
  const res = await t.agent().post('/cli/sessions');
  expect(res.status).toBe(200);
  return res.body as {
    device_code: string;
    user_code: string;
    verification_uri: string;
    verification_uri_complete: string;
  };
}

const poll = (device_code: string) => t.agent().post('/cli/sessions/token', { device_code });

describe('POST /cli/sessions', () => {
  it('starts a device authorization (RFC 8628) and keeps only a digest of the device code', async () => {
    const res = await t.agent().post('/cli/sessions');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      device_code: expect.any(String),
      user_code: expect.stringMatching(USER_CODE),
      verification_uri: `${t.apiUrl}/cli/verify`,
      verification_uri_complete: `${t.apiUrl}/cli/verify?user_code=${res.body.user_code}`,
      interval: 5,
      expires_in: 900,
    });
    expect(res.body.device_code.length).toBeGreaterThanOrEqual(40);
    const row = await t.deps
      .knex('cli_device_codes')
      .where({ device_code_digest: sha256(res.body.device_code) })
      .first();
    expect(row.status).toBe('pending');
    expect(JSON.stringify(await t.deps.knex('cli_device_codes'))).not.toContain(res.body.device_code);
  });
});

describe('command-line sign-in, end to end', () => {
  it('pends, slows a fast poller down, is approved in the browser, hands out the vcs_ bearer once', async () => {
    const user = await createUser(t, { name: 'Linus' });
    const browser = await sessionAgent(t, user);
    const flow = await start();

    const first = await poll(flow.device_code);
    expect(first.status).toBe(400);
    expect(first.body.error.code).toBe('authorization_pending');
    const fast = await poll(flow.device_code);
    expect(fast.status).toBe(400);
    expect(fast.body.error.code).toBe('slow_down');

    const page = await browser.get(`/cli/verify?user_code=${flow.user_code}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(flow.user_code);
    expect(page.text).toContain(user.email);

    const noCsrf = await browser.post('/cli/sessions/approve', { user_code: flow.user_code }, { noCsrf: true });
    expect(noCsrf.status).toBe(403);
    const approved = await browser.post('/cli/sessions/approve', {
      user_code: flow.user_code.toLowerCase().replace('-', ''),
    });
    expect(approved.status).toBe(200);
    expect(approved.body).toEqual({ user_code: flow.user_code, status: 'approved' });

    const token = await poll(flow.device_code);
    expect(token.status).toBe(201);
    expect(token.body).toMatchObject({
      access_token: expect.stringMatching(/^vcs_/),
      token_type: 'bearer',
      user: { id: user.id },
    });
    expect(token.headers.get('cache-control')).toBe('no-store');
    const again = await poll(flow.device_code);
    expect(again.status).toBe(400);
    expect(again.body.error.code).toBe('expired_token');

    const cli = t.agent().withBearer(token.body.access_token);
    const me = await cli.get('/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: user.id, via: 'cli' });
    // A signed-in caller on a session-only write, without any CSRF header: past auth, on to validation.
    const write = await cli.post('/me/ssh-keys', { name: 'laptop', public_key: 'not a key' });
    expect(write.status).toBe(422);
    expect(Object.keys(write.body.error.fields)).toEqual(['public_key']);
    expect((await cli.get('/session/token')).status).toBe(403);

    expect((await cli.delete('/session')).status).toBe(204);
    expect((await cli.get('/me')).status).toBe(401);
  });

  it('answers access_denied once the browser denies', async () => {
    const browser = await sessionAgent(t, await createUser(t));
    const flow = await start();
    const denied = await browser.post('/cli/sessions/deny', { user_code: flow.user_code });
    expect(denied.status).toBe(200);
    expect(denied.body.status).toBe('denied');
    const res = await poll(flow.device_code);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('access_denied');
    expect((await browser.post('/cli/sessions/approve', { user_code: flow.user_code })).status).toBe(422);
  });

  it('answers expired_token for an expired device code, which can no longer be approved', async () => {
    const browser = await sessionAgent(t, await createUser(t));
    const flow = await start();
    await t.deps
      .knex('cli_device_codes')
      .where({ device_code_digest: sha256(flow.device_code) })
      .update({ expires_at: new Date(Date.now() - 1000) });
    const res = await poll(flow.device_code);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('expired_token');
    const approve = await browser.post('/cli/sessions/approve', { user_code: flow.user_code });
    expect(approve.status).toBe(422);
    expect(Object.keys(approve.body.error.fields)).toEqual(['user_code']);
  });

  it('answers expired_token for an unknown device code and 422 for a missing one', async () => {
    const unknown = await poll('no-such-device-code');
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('expired_token');
    const missing = await t.agent().post('/cli/sessions/token', {});
    expect(missing.status).toBe(422);
    expect(Object.keys(missing.body.error.fields)).toEqual(['device_code']);
  });
});

describe('GET /cli/verify', () => {
  it('asks a browser that is not signed in to sign in first', async () => {
    const flow = await start();
    const res = await t.agent().get(`/cli/verify?user_code=${flow.user_code}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(res.text).toMatch(/sign in/i);
    expect(res.text).not.toContain('id="approve"');
  });

  it('shows the code, the account, Approve and Deny, with everything escaped and framing refused', async () => {
    const user = await createUser(t, { name: '<script>alert(1)</script>' });
    const flow = await start();
    const res = await (await sessionAgent(t, user)).get(`/cli/verify?user_code=${flow.user_code}`);
    expect(res.status).toBe(200);
    expect(res.text).toContain('id="approve"');
    expect(res.text).toContain('id="deny"');
    expect(res.text).toContain('X-CSRF-Token');
    expect(res.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(res.text).not.toContain('<script>alert(1)');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });

  it('offers to enter the code again when it is not waiting, escaping what was given', async () => {
    const res = await (await sessionAgent(t, await createUser(t))).get(
      '/cli/verify?user_code=%22%3E%3Cimg%20src%3Dx%3E',
    );
    expect(res.status).toBe(200);
    expect(res.text).toContain('not waiting for approval');
    expect(res.text).not.toContain('<img');
    expect(res.text).not.toContain('id="approve"');
  });
});
