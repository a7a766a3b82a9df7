/**
 * `service login` for real: the client as a child process runs the device flow against the API, and a
 * real browser (Debian's chromium, driven by playwright-core) signs in and approves on the API's page.
 * The API's other HTML page, /docs, is checked in the same browser for what a person sees.
 */
import { readFileSync, statSync } from 'node:fs';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi, type TestContext as VitestContext } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createAccessToken, createTeam, createUser, PASSWORD } from '../helpers/fixtures';
import { cliHome, runCli } from '../helpers/cli';
import { ensureChromium, launchBrowser } from '../helpers/browser';
import { credentialsPath } from '../../cli/config';

const t = useTestContext();
// Each test runs the client (a node process) several times: slow on a busy machine.
vi.setConfig({ testTimeout: 120_000 });
let browser: BrowserContext | undefined;
let closeBrowser: (() => Promise<void>) | undefined;
let noBrowser: string | undefined;

beforeAll(async () => {
  const found = ensureChromium();
  if ('reason' in found) {
    noBrowser = found.reason;
    console.log(`[cli login] browser tests skipped: ${noBrowser}`);
    return;
  }
  ({ context: browser, close: closeBrowser } = await launchBrowser(found.path));
}, 600_000);

afterAll(async () => {
  await closeBrowser?.();
});

function needBrowser(ctx: VitestContext): BrowserContext {
  if (!browser) {
    console.log(`[cli login] skipped "${ctx.task.name}": ${noBrowser}`);
    ctx.skip();
  }
  return browser!;
}

/** A page that records what the browser console reports as errors (CSP violations included). */
async function openPage(context: BrowserContext, url: string): Promise<{ page: Page; errors: string[] }> {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => errors.push(e.message));
  const res = await page.goto(url, { waitUntil: 'networkidle' });
  expect(res?.status()).toBe(200);
  return { page, errors };
}

/** Signs the browser in to the console as the user (POST /session from the browser's own cookie store). */
async function signInBrowser(context: BrowserContext, email: string): Promise<void> {
  await context.clearCookies();
  const res = await context.request.post(`${t.apiUrl}/session`, { data: { email, password: PASSWORD } });
  expect(res.status()).toBe(201);
}

const URL_LINE = /(http:\/\/\S+\/cli\/verify\?user_code=(\S+))/;

describe('service login', () => {
  it('shows the code and URL; approved in the browser, it stores the vcs_ sign-in with mode 0600', async (ctx) => {
    const context = needBrowser(ctx);
    const user = await createUser(t, { name: 'Ada Lovelace' });
    const home = cliHome(t);
    const login = runCli(t, ['login'], home);
    const [, url, code] = await login.waitFor(URL_LINE);
    const shown = decodeURIComponent(code);
    await login.waitFor(new RegExp(`check that it shows the code ${shown}`));

    // Not signed in yet: the page asks for a sign-in first, showing the code.
    await context.clearCookies();
    const before = await openPage(context, url);
    await expect(before.page.locator('h1').textContent()).resolves.toBe('Sign in to continue');
    await expect(before.page.locator('.code').textContent()).resolves.toBe(shown);
    expect(before.errors).toEqual([]);
    await before.page.close();

    await signInBrowser(context, user.email);
    const { page, errors } = await openPage(context, url);
    await expect(page.locator('.code').textContent()).resolves.toBe(shown);
    await expect(page.locator('body').textContent()).resolves.toContain(user.email);
    await page.locator('#approve').click();
    await page.locator('#result', { hasText: 'Approved' }).waitFor();
    expect(errors).toEqual([]);
    await page.close();

    const res = await login;
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain(`Signed in to ${t.baseUrl} as Ada Lovelace <${user.email}>`);
    const file = credentialsPath({ ...process.env, ...home });
    expect(file.startsWith(home.XDG_CONFIG_HOME)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    expect(stored.sessions[t.baseUrl].token).toMatch(/^vcs_/);

    // whoami acts with it (the console of the last login when neither --api nor VC_API says)...
    const me = await runCli(t, ['whoami', '--json'], { ...home, VC_API: undefined });
    expect(me.code, me.stderr).toBe(0);
    expect(JSON.parse(me.stdout)).toMatchObject({ email: user.email, via: 'cli' });
    // ...and VC_TOKEN takes precedence over it.
    const other = await createUser(t);
    const token = await createAccessToken(t, other, await createTeam(t, other));
    const asToken = await runCli(t, ['whoami', '--json'], { ...home, VC_TOKEN: token });
    expect(JSON.parse(asToken.stdout)).toMatchObject({ email: other.email, via: 'token' });

    // logout ends the session on the server, not only here.
    const out = await runCli(t, ['logout'], home);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain(`Signed out of ${t.baseUrl}`);
    const after = await fetch(`${t.apiUrl}/me`, {
      headers: { authorization: `Bearer ${stored.sessions[t.baseUrl].token}` },
    });
    expect(after.status).toBe(401);
    expect(JSON.parse(readFileSync(file, 'utf8')).sessions).toEqual({});
    const again = await runCli(t, ['whoami'], home);
    expect(again.code).toBe(4);
    expect(again.stderr).toContain('Not signed in');
    expect(again.stderr).toContain('service login');
  });

  it('a code typed on the page, then denied: the client exits 4 saying so, and stores nothing', async (ctx) => {
    const context = needBrowser(ctx);
    const user = await createUser(t);
    const home = cliHome(t);
    const login = runCli(t, ['login', '--api', t.baseUrl], { ...home, VC_API: undefined });
    const [, , code] = await login.waitFor(URL_LINE);
    const [, plainUrl] = await login.waitFor(/\(or open (\S+) and enter the code\)/);
    await signInBrowser(context, user.email);
    // The page without the code asks for it; the code typed in lower case, without its dash, is found.
    const { page, errors } = await openPage(context, plainUrl);
    await page.locator('#user_code').fill(decodeURIComponent(code).replace('-', '').toLowerCase());
    await page.locator('input[type=submit]').click();
    await page.locator('#deny').waitFor();
    await expect(page.locator('.code').textContent()).resolves.toBe(decodeURIComponent(code));
    await page.locator('#deny').click();
    await page.locator('#result', { hasText: 'Denied' }).waitFor();
    expect(errors).toEqual([]);
    await page.close();
    const res = await login;
    expect(res.code).toBe(4);
    expect(res.stderr).toContain('denied in the browser');
    expect(() => statSync(credentialsPath({ ...process.env, ...home }))).toThrow();
  });
});

describe('GET /docs in a browser', () => {
  it('shows every operation, with no console errors, and its details open', async (ctx) => {
    const context = needBrowser(ctx);
    const { page, errors } = await openPage(context, `${t.apiUrl}/docs`);
    const doc = await (await fetch(`${t.apiUrl}/openapi.json`)).json();
    const operations = Object.values(doc.paths as Record<string, object>).reduce(
      (n, ops) => n + Object.keys(ops).length,
      0,
    );
    await expect(page.locator('h1').textContent()).resolves.toContain(doc.info.title);
    expect(await page.locator('section').count()).toBe(operations);
    const deploy = page.locator('#deployEnvironment');
    await expect(deploy.locator('code').first().textContent()).resolves.toBe('/environments/{id}/deploy');
    const responses = deploy.locator('details', { hasText: 'Responses' });
    expect(await responses.locator('pre').isVisible()).toBe(false);
    await responses.locator('summary').click();
    expect(await responses.locator('pre').isVisible()).toBe(true);
    await expect(responses.locator('pre').textContent()).resolves.toContain('deploy_in_progress');
    await page.locator('a', { hasText: 'openapi.json' }).click();
    await page.waitForURL(/openapi\.json$/);
    expect(errors).toEqual([]);
    await page.close();
  });
});
