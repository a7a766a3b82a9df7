import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { signIn, useConsole } from '../helpers/console-browser';
import { createUser } from '../helpers/fixtures';

/**
 * Refusals as the console shows them: the API's message, and for a 429 when to try again (Retry-After).
 * Two wrong passwords block the address here.
 */
const t = useTestContext({ env: { FAILED_CREDENTIALS_LIMIT: '2', FAILED_CREDENTIALS_BLOCK_SECONDS: '600' } });
const browser = useConsole(t);

describe('refusals in the console', () => {
  it("shows the API's message, then when to try again once the address is blocked (429)", async () => {
    const user = await createUser(t);
    const c = browser();
    const { page } = c;
    const post = () =>
      fetch(`${t.apiUrl}/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: user.email, password: 'still wrong' }),
      });
    const first = await post();
    expect(first.status).toBe(401);
    const wrongMessage = (await first.json()).error.message;
    await page.goto(`${t.baseUrl}/sign-in`);
    await signIn(page, user.email, 'not the password');
    const alert = page.getByRole('alert');
    await alert.getByText(wrongMessage).waitFor();
    // Past the limit, the right password too is refused: the page says the API's message and when to retry.
    await signIn(page, user.email);
    const refused = await post();
    expect(refused.status).toBe(429);
    const { error } = await refused.json();
    const minutes = Math.round(Number(refused.headers.get('retry-after')) / 60);
    expect(minutes).toBeGreaterThanOrEqual(9);
    await alert.getByText(error.message).waitFor();
    await alert.getByText(new RegExp(`Try again in (${minutes}|${minutes + 1}) minutes\\.`)).waitFor();
    await c.screenshot('sign-in-429');
    expect(c.problems).toEqual([]);
  });
});
