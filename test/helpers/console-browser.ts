/**
 * The web console in a real browser for the tests: Debian's chromium through playwright-core, on the
 * console of a test context. Collects what must never happen (a page error, a 5xx answer, a request to
 * another origin) so each test ends with `expect(c.problems).toEqual([])`, and saves screenshots.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { BrowserContext, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, expect, onTestFailed } from 'vitest';
import { ensureChromium, launchBrowser } from './browser';
import { ensureConsoleBuilt } from './console';
import type { TestContext } from './context';
import { PASSWORD } from './fixtures';
import { SCREENSHOTS } from './console-screenshots';
import type { Agent } from './http';

export interface ConsoleBrowser {
  page: Page;
  context: BrowserContext;
  problems: string[];
  /**
   * Saves full-page screenshots of the page as it is at 1280 px and at 390 px wide (SCREENSHOTS/1280/<name>.png
   * and SCREENSHOTS/390/<name>.png; the viewport is then as it was) and answers the first's path.
   */
  screenshot(name: string): Promise<string>;
  /** The page as it is when a test failed: SCREENSHOTS/failed/<name>.png. */
  failed(name: string): Promise<void>;
  /** Opens a console path (`/environments/...`) and waits for its heading. */
  go(path: string): Promise<void>;
  /**
   * Resolves once no request of the page has been in flight for `quietMs` (150 by default): the page has loaded
   * what it shows. Playwright's `networkidle` waits 500 ms for the same, which was a third of a screen walk's time.
   */
  settled(quietMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** `via`: the address the browser uses instead of the context's API (a relay in front of it); its origin is the page's. */
export async function openConsole(t: TestContext, o: { via?: string } = {}): Promise<ConsoleBrowser> {
  const base = o.via ?? t.baseUrl;
  ensureConsoleBuilt();
  const chromium = ensureChromium();
  if ('reason' in chromium) throw new Error(`No browser for the console tests: ${chromium.reason}`);
  const browser = await launchBrowser(chromium.path);
  const page = browser.context.pages()[0] ?? (await browser.context.newPage());
  const origin = new URL(base).origin;
  const problems: string[] = [];
  const inFlight = new Set<Request>();
  let lastChange = Date.now();
  const done = (req: Request) => {
    inFlight.delete(req);
    lastChange = Date.now();
  };
  page.on('requestfinished', done);
  page.on('requestfailed', done);
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (
      msg.type() === 'error' &&
      !/Failed to load resource: the server responded with a status of 4\d\d/.test(msg.text()) &&
      // Chromium aborts what is in flight when an address of any interface of the machine changes, and the files
      // beside this one make and remove sandbox networks (veths) all the time: a property of the test machine, not
      // of the console. What the page then fails to show, the test's own steps catch.
      !/Failed to load resource: net::ERR_NETWORK_CHANGED/.test(msg.text())
    )
      problems.push(`console error: ${msg.text()}`);
  });
  page.on('request', (req) => {
    inFlight.add(req);
    lastChange = Date.now();
    const url = req.url();
    if (url.startsWith('data:') || url.startsWith('blob:')) return;
    if (new URL(url).origin !== origin) problems.push(`request to another origin: ${req.method()} ${url}`);
  });
  page.on('response', (res) => {
    if (res.status() >= 500) problems.push(`${res.status()} from ${res.request().method()} ${res.url()}`);
  });
  for (const dir of ['1280', '390', 'failed']) mkdirSync(join(SCREENSHOTS, dir), { recursive: true });
  return {
    page,
    context: browser.context,
    problems,
    async screenshot(name) {
      const was = page.viewportSize() ?? { width: 1280, height: 900 };
      const files: string[] = [];
      for (const [width, height] of [
        [1280, 900],
        [390, 844],
      ]) {
        if (page.viewportSize()?.width !== width) await page.setViewportSize({ width, height });
        const file = join(SCREENSHOTS, String(width), `${name}.png`);
        await page.screenshot({ path: file, fullPage: true });
        files.push(file);
      }
      await page.setViewportSize(was);
      return files[0];
    },
    async failed(name) {
      await page.screenshot({ path: join(SCREENSHOTS, 'failed', `${name}.png`), fullPage: true });
    },
    async go(path) {
      await page.goto(base + path);
      await page.locator('h1').first().waitFor();
    },
    async settled(quietMs = 150) {
      const deadline = Date.now() + 30_000;
      while (inFlight.size > 0 || Date.now() - lastChange < quietMs) {
        if (Date.now() > deadline)
          throw new Error(`the page still loads after 30 s: ${[...inFlight].map((r) => r.url()).join(', ')}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    close: () => browser.close(),
  };
}

/**
 * The console signed in with `agent`'s session (its cookie in the browser); `acceptDialogs`: every
 * confirmation (`confirm()`) is answered OK.
 */
export async function openConsoleAs(
  t: TestContext,
  agent: Agent,
  o: { acceptDialogs?: boolean; via?: string } = {},
): Promise<ConsoleBrowser> {
  const c = await openConsole(t, o);
  await c.context.addCookies([
    { name: 'vc_session', value: agent.cookies.get('vc_session')!, url: o.via ?? t.baseUrl },
  ]);
  if (o.acceptDialogs) c.page.on('dialog', (d) => void d.accept());
  return c;
}

/** Signs in through the console's form (any page asks for it when signed out). */
export async function signIn(page: Page, email: string, password = PASSWORD) {
  await page.getByLabel('E-mail address').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

/** The page's width beyond the viewport: 0 when nothing scrolls sideways. */
export async function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
}

/** The fields (input, select, textarea) of the page that have no visible label: [] when every one has. */
async function unlabelledFields(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll<HTMLInputElement>('input, select, textarea')]
      .filter((el) => el.type !== 'hidden' && ![...(el.labels ?? [])].some((l) => l.textContent?.trim()))
      .map((el) => el.outerHTML),
  );
}

/** A browser on the file's console (signed out), opened before its tests and closed after them. */
export function useConsole(t: TestContext): () => ConsoleBrowser {
  let c: ConsoleBrowser | undefined;
  beforeAll(async () => {
    c = await openConsole(t);
  }, 180_000);
  afterAll(async () => {
    await c?.close();
  });
  return () => c!;
}

/** Each test answers for what happened during it: the page's problems are cleared before it, and on failure shown with a screenshot. */
export function eachTestAnswersForProblems(c: () => ConsoleBrowser): void {
  beforeEach(() => {
    c().problems.length = 0;
    onTestFailed(async ({ task }) => {
      console.log(`[console test] problems during "${task.name}":`, c().problems);
      await c().failed(task.name.slice(0, 40));
    });
  });
}

/** At 390 px the page does not scroll sideways and every field on it has a visible label; saves its screenshots. */
export async function checkNarrow(c: ConsoleBrowser, name: string): Promise<void> {
  await c.page.setViewportSize({ width: 390, height: 844 });
  expect(await horizontalOverflow(c.page), name).toBeLessThanOrEqual(0);
  expect(await unlabelledFields(c.page), name).toEqual([]);
  await c.page.setViewportSize({ width: 1280, height: 900 });
  await c.screenshot(name);
}

/**
 * The task the page went to: checked to be of this type, pending, on this environment, then cancelled
 * through the API (no worker runs in the screen tests) so that the next change is not refused. Its row.
 */
export async function cancelPendingTask(
  c: ConsoleBrowser,
  t: TestContext,
  agent: Agent,
  type: string,
  environmentId: string,
) {
  await c.page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/);
  const id = c.page.url().split('/').pop()!;
  const task = await t.deps.knex('tasks').where({ id }).first();
  expect(task).toMatchObject({ environment_id: environmentId, type, status: 'pending' });
  expect((await agent.post(`/tasks/${id}/cancel`)).status).toBe(200);
  return task;
}

let axeSource: string | undefined;

/**
 * axe-core's serious and critical violations on the page as it is, in the light and the dark colour scheme
 * (prefers-color-scheme, so the contrast of both is checked): [] when there is none. Ends in light.
 */
export async function axeViolations(page: Page, name: string): Promise<string[]> {
  axeSource ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  const found: string[] = [];
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
    const violations = await page.evaluate(async () => {
      const axe = (window as unknown as { axe: { run(c: Document, o: object): Promise<AxeResults> } }).axe;
      const r = await axe.run(document, { resultTypes: ['violations'] });
      return r.violations
        .filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map(
          (v) =>
            `${v.id} (${v.impact}): ${v.nodes.map((n) => `${n.target.join(' ')} ${n.failureSummary ?? ''}`).join(' | ')}`,
        );
    });
    found.push(...violations.map((v) => `${name}, ${scheme}: ${v}`));
  }
  await page.emulateMedia({ colorScheme: 'light' });
  return found;
}

interface AxeResults {
  violations: { id: string; impact: string | null; nodes: { target: string[]; failureSummary?: string }[] }[];
}
