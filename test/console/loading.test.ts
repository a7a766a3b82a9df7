import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { useConsole } from '../helpers/console-browser';

/**
 * The console's own files dropped on the way (a changed network aborts what is in flight; a proxy restarted): the
 * page loads once more by itself (console/public/boot.js), and says what to do when that fails too, instead of
 * staying blank.
 */
const t = useTestContext({ edge: false });
const browser = useConsole(t);

const MAIN_JS = /\/assets\/index-[\w-]+\.js$/;
const DROPPED = 'console error: Failed to load resource: net::ERR_CONNECTION_RESET';

/** Drops the console's main script `times` times (Infinity: always), counting every request for it. */
async function dropMainScript(times: number) {
  const seen = { requests: 0 };
  await browser().page.route(MAIN_JS, (route) =>
    ++seen.requests <= times ? route.abort('connectionreset') : route.continue(),
  );
  return seen;
}

/** The sign-up page, its script dropped once: the page loads once more by itself and shows its form. */
async function signUpAfterOneDrop() {
  const c = browser();
  const seen = await dropMainScript(1);
  try {
    await c.page.goto(`${t.baseUrl}/sign-up`);
    await c.page.getByLabel('Name').waitFor();
    expect(seen.requests).toBe(2);
    expect(c.problems).toEqual([DROPPED]);
  } finally {
    await c.page.unrouteAll();
    c.problems.length = 0;
  }
}

describe('the console when its files are dropped on the way', () => {
  it('loads the page once more when its script was dropped, and works', async () => {
    await signUpAfterOneDrop();
  });

  it('says what to do when the second load fails too, and loads no more by itself', async () => {
    const c = browser();
    const seen = await dropMainScript(Number.POSITIVE_INFINITY);
    try {
      await c.page.goto(`${t.baseUrl}/sign-in`);
      await c.page.getByRole('alert').getByText('Check your connection, then reload the page.').waitFor();
      await new Promise((r) => setTimeout(r, 1_000));
      expect(seen.requests).toBe(2);
      expect(c.problems).toEqual([DROPPED, DROPPED]);
      await c.screenshot('files-not-loaded');
    } finally {
      await c.page.unrouteAll();
      c.problems.length = 0;
    }
    // The person reloads with the network back: the console starts, and forgets the reload it made, so the next
    // dropped file is again loaded once more.
    await c.page.reload();
    await c.page.getByLabel('Password').waitFor();
    await signUpAfterOneDrop();
  });
});
