import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { PASSWORD, createUser } from '../../helpers/fixtures';

// Three failed credentials refuse the address; the rest of this file runs refused.
const t = useTestContext({ env: { FAILED_CREDENTIALS_LIMIT: '3', FAILED_CREDENTIALS_BLOCK_SECONDS: '600' } });

describe('POST /session', () => {
  it('counts wrong passwords per address, clears the count on success, and refuses the address past the limit', async () => {
    const user = await createUser(t);
    const wrong = () => t.agent().post('/session', { email: user.email, password: 'wrong password here' });
    expect((await wrong()).status).toBe(401);
    expect((await wrong()).status).toBe(401);
    // A sign-in that works clears the count...
    expect((await t.agent().post('/session', { email: user.email, password: PASSWORD })).status).toBe(201);
    expect((await wrong()).status).toBe(401);
    expect((await wrong()).status).toBe(401);
    // ...so only now is the third consecutive failure reached.
    expect((await wrong()).status).toBe(401);
    const refused = await t.agent().post('/session', { email: user.email, password: PASSWORD });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.headers.getSetCookie()).toEqual([]);
  });
});
