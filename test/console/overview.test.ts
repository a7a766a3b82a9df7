import { copyFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertSamples } from '../../db/queries/resources';
import { createEnvironmentMachines } from '../../api/machines/service';
import { useTestContext } from '../helpers/context';
import {
  commitAll,
  commitWebApp,
  createDeployWorld,
  EXITS_AFTER_A_MOMENT,
  waitForTask,
} from '../helpers/deploy-fixtures';
import { PASSWORD, sessionAgent } from '../helpers/fixtures';
import { ENVIRONMENT_TABS, PROJECT_TABS, TEAM_TABS } from '../../console/src/screens/tabs';
import type { Agent } from '../helpers/http';
import {
  axeViolations,
  type ConsoleBrowser,
  checkNarrow,
  eachTestAnswersForProblems,
  horizontalOverflow,
  openConsoleAs,
} from '../helpers/console-browser';

/**
 * The environment's overview as a person reads it (issue 31), in chromium against the real system with a
 * worker: names and place (breadcrumb, tab title, the console's name), the actions the API allows now and
 * what each will do, what is live (commit, message, who, when, how long), the page following a running
 * deploy and updating when it ends without a reload, maintenance's one switch, secrets by default at
 * import, plain words in the bell, focus on a refused field; axe-core on each screen in both colour
 * schemes, and each at 390 px.
 */
const t = useTestContext({ worker: true, edge: false, env: { CONSOLE_NAME: 'Acme Hosting' } });
let c: ConsoleBrowser;
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let agent: Agent;
let v1 = '';
const a11y: string[] = [];
const env = () => `/environments/${w.environment.id}`;

beforeAll(async () => {
  w = await createDeployWorld(t, { gatedFirstCommit: true });
  // Its web server and build machine, as creating the environment through the API records them (the overview's
  // "Machines" names its instances and plan).
  await t.deps.knex.transaction((trx) => createEnvironmentMachines(trx, t.deps, w.environment));
  await t.deps.knex('projects').where({ id: w.project.id }).update({ name: 'storefront' });
  await t.deps.knex('teams').where({ id: w.team.id }).update({ name: 'Acme team' });
  await t.deps.knex('users').where({ id: w.owner.id }).update({ name: 'Olive Owner' });
  await t.deps.knex('users').where({ id: w.developer.id }).update({ name: 'Dev Deployer' });
  agent = await sessionAgent(t, w.owner);
  c = await openConsoleAs(t, agent);
  await c.page.setViewportSize({ width: 1280, height: 900 });
}, 180_000);

afterAll(async () => {
  await c?.close();
});

/** The team, project and environment as the breadcrumb links them. */
const place = () => [
  ['Acme team', `/teams/${w.team.id}`],
  ['storefront', `/projects/${w.project.id}`],
  ['production', env()],
];

/** The breadcrumb's links, [text, href], once the team's, project's and environment's names have loaded. */
async function crumbLinks(): Promise<string[][]> {
  const crumbs = c.page.getByRole('navigation', { name: 'Breadcrumb' });
  for (const [name] of place()) await crumbs.getByRole('link', { name }).waitFor();
  return crumbs
    .getByRole('link')
    .evaluateAll((as) => as.map((a) => [a.textContent ?? '', a.getAttribute('href') ?? '']));
}

/**
 * A backup task of production's that runs, as a row of the tasks table only (no workflow): what the console shows
 * of a running task, which the test ends or deletes itself.
 */
async function runningBackupRow(name: string): Promise<{ id: string }> {
  const [row] = await t.deps
    .knex('tasks')
    .insert({
      team_id: w.team.id,
      project_id: w.project.id,
      environment_id: w.environment.id,
      kind: 'backups',
      type: 'backup',
      status: 'running',
      account_user_id: w.owner.id,
      account_via: 'session',
      workflow_id: `overview-${name}-${Date.now()}`,
      started_at: new Date(),
    })
    .returning('id');
  return row;
}

/** axe on the page as it is now, in both schemes; collected, and asserted empty by each test. */
async function checkA11y(name: string) {
  const found = await axeViolations(c.page, name);
  a11y.push(...found);
  expect(found).toEqual([]);
}

/** Another environment of the project, made through the API (so that it has its web server). */
async function newEnvironment(name: string): Promise<{ id: string }> {
  const made = await agent.post(`/projects/${w.project.id}/environments`, { name, git_ref: 'main' });
  expect(made.status, made.text).toBe(201);
  return made.body;
}

/** Deploys the environment's branch through the API and waits for its success; answers the task's id. */
async function deployTo(environmentId: string): Promise<string> {
  const res = await agent.post(`/environments/${environmentId}/deploy`);
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, w.api, res.body.id);
  expect(task.status, task.error ?? '').toBe('succeeded');
  return task.id as string;
}

describe.sequential('the environment overview', () => {
  eachTestAnswersForProblems(() => c);

  it('names the place: team › project › environment as links, the tab title, the console in the header', async () => {
    const { page } = c;
    await c.go(env());
    expect(await crumbLinks()).toEqual(place());
    await expect.poll(() => page.title()).toBe('production · storefront');
    expect(await page.locator('header .brand').textContent()).toBe('Acme Hosting');
    // Nothing live yet: the overview says how to start, and offers only what can be asked.
    await page.getByText('No deploys yet: deploy main to start.').waitFor();
    const head = (await w.api.get(`${env()}/deploy`)).body.head_commit as string;
    v1 = head;
    await page.getByText(`main at ${head.slice(0, 7)}: build it and put it live`).waitFor();
    expect(await page.getByRole('button', { name: 'Redeploy' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Rollback' }).count()).toBe(0);
    // Maintenance: its state and one switch.
    await page.getByText('Off: the app answers its visitors.').waitFor();
    expect(await page.getByRole('button', { name: /Turn maintenance/ }).allTextContents()).toEqual([
      'Turn maintenance on',
    ]);
    await page.getByText('None yet. Add a domain').waitFor();
    await c.screenshot('overview-empty');
    await checkA11y('overview, nothing live');
    await checkNarrow(c, 'overview-empty');
    expect(c.problems).toEqual([]);
  });

  it('follows a running deploy and shows what went live when it ends, with no reload', async () => {
    const { page } = c;
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/);
    const taskId = page.url().split('/').pop()!;
    // the task's page says where it is, as the environment's does: team › project › environment › the task
    expect(await crumbLinks()).toEqual([...place(), ['Deploy', `/tasks/${taskId}`]]);
    await c.go(env());
    // While it runs: no Deploy button, the reason instead, and the task in the list as running or waiting.
    await page.getByText('A deploy is running on this environment').waitFor();
    expect(await page.getByRole('button', { name: 'Deploy', exact: true }).count()).toBe(0);
    const row = page.getByRole('row').filter({ has: page.locator(`a[href="/tasks/${taskId}"]`) });
    await row.getByText(/running…|waiting…/).waitFor();
    await c.screenshot('overview-deploying');
    await checkA11y('overview, a deploy running');
    await page.evaluate(() => {
      (window as unknown as { stayed: boolean }).stayed = true;
    });
    writeFileSync(w.repo.gate, '');
    expect((await waitForTask(t, w.api, taskId)).status).toBe('succeeded');
    // The same page (no reload) now says what is live: commit, message, who, when, how long.
    const live = page.getByRole('region', { name: 'Live now' });
    await live.getByText(v1.slice(0, 7)).waitFor({ timeout: 30_000 });
    await live.getByText('v1', { exact: true }).waitFor();
    await live.getByText(/by Olive Owner/).waitFor();
    await live.getByText(/^(\d+(\.\d)? s|\d+ min \d+ s) \(its task\)$/).waitFor();
    await row.getByText('succeeded').waitFor();
    expect(await row.locator('td').last().textContent()).toMatch(/^(\d+(\.\d)? s|\d+ min \d+ s)$/);
    await page.getByRole('button', { name: 'Redeploy' }).waitFor();
    expect(await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed)).toBe(true);
    expect(c.problems).toEqual([]);
  });

  it('says what Deploy, Redeploy and Rollback will do; the message is text, never markup', async () => {
    const { page } = c;
    w.repo.commit('v2');
    const v2 = commitAll(w.repo.dir, 'Checkout <b>faster</b> & safer');
    const res = await w.api.post(`${env()}/deploy`);
    expect((await waitForTask(t, w.api, res.body.id)).status).toBe('succeeded');
    const now = Date.now();
    await insertSamples(
      t.deps.knex,
      Array.from({ length: 30 }, (_, i) => ({
        environment_id: w.environment.id,
        at: new Date(now - (30 - i) * 60_000),
        cpu: 0.1 + i / 100,
        memory_bytes: (100 + i) * 1024 * 1024,
        disk_bytes: 200 * 1024 * 1024,
      })),
    );
    expect((await agent.post(`${env()}/domains`, { hostname: 'shop.example.test' })).status).toBe(201);
    await c.go(env());
    // The app's address, and each domain with its state and its certificate's.
    const address = page.getByRole('region', { name: 'Address' });
    const url = (await agent.get(env())).body.url as string;
    expect(await address.getByRole('link', { name: url }).getAttribute('href')).toBe(url);
    const domain = address.getByRole('listitem').filter({ hasText: 'shop.example.test' });
    await domain.getByText('pending', { exact: true }).waitFor();
    await domain.getByText('certificate: none yet').waitFor();
    // Instances and plan, from GET .../scale.
    const scale = (await agent.get(`${env()}/scale`)).body as { instances: number; plan: string };
    await page
      .getByRole('region', { name: 'Machines' })
      .getByText(`${scale.instances} instance of plan ${scale.plan}.`)
      .waitFor();
    // The last hour's CPU as a small line, named by its latest and highest values.
    const series = (await agent.get(`${env()}/resources?window=1h`)).body.series.cpu as { value: number }[];
    const spark = page.getByRole('img', { name: /^CPU over the last hour/ });
    await spark.waitFor();
    const r = (n: number) => Math.round(n * 10) / 10;
    expect(await spark.getAttribute('aria-label')).toBe(
      `CPU over the last hour (% of one core): now ${r(series.at(-1)!.value)}%, highest ${r(Math.max(...series.map((p) => p.value)))}%`,
    );
    const live = page.getByRole('region', { name: 'Live now' });
    await live.getByText('Checkout <b>faster</b> & safer').waitFor();
    expect(await live.locator('b').count()).toBe(0);
    await page.getByText(`${v2.slice(0, 7)} again, the live release`).waitFor();
    await page.getByText(`back to ${v1.slice(0, 7)} “v1”`).waitFor();
    await page.getByText(`main at ${v2.slice(0, 7)} (already built: no build)`).waitFor();
    const described = await page
      .getByRole('button', { name: 'Rollback' })
      .evaluate((b) => document.getElementById(b.getAttribute('aria-describedby')!)?.textContent);
    expect(described).toMatch(new RegExp(`^back to ${v1.slice(0, 7)}`));
    const shot = await c.screenshot('overview');
    if (process.env.UPDATE_CONSOLE_SCREENSHOT === '1') copyFileSync(shot, path.join('docs', 'console-overview.png'));
    await page.emulateMedia({ colorScheme: 'dark' });
    await c.screenshot('overview-dark');
    await page.emulateMedia({ colorScheme: 'light' });
    await checkA11y('overview, live');
    await checkNarrow(c, 'overview');
    expect(c.problems).toEqual([]);
  });

  it('shows maintenance on with its one switch, "Turn maintenance off"', async () => {
    const { page } = c;
    const res = await agent.post(`${env()}/maintenance`, { maintenance: true, note: 'Back at noon' });
    expect(res.status).toBe(202);
    expect((await waitForTask(t, w.api, res.body.id)).status).toBe('succeeded');
    await c.go(env());
    await page.getByText(/visitors see the maintenance page \(“Back at noon”\)/).waitFor();
    expect(await page.getByRole('button', { name: /Turn maintenance/ }).allTextContents()).toEqual([
      'Turn maintenance off',
    ]);
    await checkA11y('overview, maintenance on');
    await page.getByRole('button', { name: 'Turn maintenance off' }).click();
    await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/);
    const id = page.url().split('/').pop()!;
    expect(await t.deps.knex('tasks').where({ id }).first()).toMatchObject({ type: 'maintenance_off' });
    expect((await waitForTask(t, w.api, id)).status).toBe('succeeded');
    expect(c.problems).toEqual([]);
  });

  it('imports names that look secret as secrets (pre-checked, row by row); values are masked, non-secret ones can be shown', async () => {
    const { page } = c;
    await c.go(`${env()}/variables`);
    await page
      .getByLabel('.env text')
      .fill('API_SECRET=s3cr3t-value\nPUBLIC_URL=https://shop.test\nSENTRY_DSN=https://k@s/1\n');
    await page.getByRole('button', { name: 'Preview' }).click();
    const preview = page.getByRole('table', { name: 'Preview of the import' });
    await preview.waitFor();
    expect(await page.getByLabel('API_SECRET is secret').isChecked()).toBe(true);
    expect(await page.getByLabel('SENTRY_DSN is secret').isChecked()).toBe(true);
    expect(await page.getByLabel('PUBLIC_URL is secret').isChecked()).toBe(false);
    await page.getByLabel('SENTRY_DSN is secret').uncheck();
    await c.screenshot('variables-import-secrets');
    await checkA11y('variables, import preview');
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await page.getByText('Imported: 3 added').waitFor();
    const stored = await t.deps
      .knex('variables')
      .where({ environment_id: w.environment.id })
      .orderBy('name')
      .select('name', 'secret');
    expect(stored).toEqual([
      { name: 'API_SECRET', secret: true },
      { name: 'PUBLIC_URL', secret: false },
      { name: 'SENTRY_DSN', secret: false },
    ]);
    const table = page.getByRole('table', { name: 'Variables' });
    await table.getByRole('row').filter({ hasText: 'API_SECRET' }).getByText('secret (write-only)').waitFor();
    // Masked until shown; a secret has no "Show" (its value never comes back).
    expect(await table.getByText('https://shop.test').count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Show the value of API_SECRET' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Show the value of PUBLIC_URL' }).click();
    await table.getByText('https://shop.test').waitFor();
    expect(await page.content()).not.toContain('s3cr3t-value');
    await checkA11y('variables');
    await checkNarrow(c, 'variables-masked');
    expect(c.problems).toEqual([]);
  });

  it('moves focus to the first refused field of a form', async () => {
    const { page } = c;
    await c.go(`${env()}/domains`);
    await page.getByLabel('Hostname').fill('not a host name');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.locator('[aria-invalid="true"]').waitFor();
    // the focus moves once the refused form has rendered (an effect after it), not in the same frame
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.getAttribute('name')), { timeout: 5_000 })
      .toBe('hostname');
    await checkA11y('domains, refused');
    expect(c.problems).toEqual([]);
  });

  it('asks a read the network dropped once more; a write the network dropped is sent again under its key, once', async () => {
    const { page } = c;
    // what Chromium does to what is in flight when the machine's network changes (net::ERR_NETWORK_CHANGED)
    const url = '**/api/vc/v1/environments/*/domains';
    let gets = 0;
    const keys: Array<string | null> = [];
    await page.route(url, async (route) => {
      const method = route.request().method();
      if (method === 'GET' && ++gets === 1) return route.abort('internetdisconnected');
      if (method === 'POST') {
        keys.push(await route.request().headerValue('idempotency-key'));
        if (keys.length === 1) return route.abort('internetdisconnected');
      }
      return route.continue();
    });
    try {
      await c.go(`${env()}/domains`);
      await page.getByText(/\d+ of \d+ domains used/).waitFor();
      expect(gets).toBe(2);
      expect(await page.getByText('Failed to fetch').count()).toBe(0);
      await page.getByLabel('Hostname').fill('dropped.example.test');
      await page.getByRole('button', { name: 'Add domain' }).click();
      await page.getByRole('heading', { name: 'dropped.example.test' }).waitFor();
      expect(keys).toHaveLength(2);
      expect(keys[0]).toMatch(/^[0-9a-f]{32}$/);
      expect(keys[1]).toBe(keys[0]);
      expect(await page.getByText('Failed to fetch').count()).toBe(0);
      expect(await t.deps.knex('domains').where({ hostname: 'dropped.example.test' })).toHaveLength(1);
    } finally {
      await page.unroute(url);
    }
    // the browser's own line for each request dropped, and nothing else
    expect(c.problems.length).toBe(2);
    expect(
      c.problems.every((p) => p.includes('ERR_INTERNET_DISCONNECTED')),
      c.problems.join('\n'),
    ).toBe(true);
    c.problems.length = 0;
  });

  it('the bell reads as words: "Waiting tasks: 1", nothing for none', async () => {
    const { page } = c;
    await c.go('/');
    const bell = page.getByRole('button', { name: /^Notifications/ });
    await bell.waitFor();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    expect(await bell.textContent()).not.toMatch(/\b0\b|waiting \d|\d new/);
    const task = await runningBackupRow('bell');
    try {
      await page.reload();
      await expect.poll(() => bell.textContent(), { timeout: 30_000 }).toMatch(/Waiting tasks: 1/);
      await checkA11y('dashboard');
      await checkNarrow(c, 'dashboard');
    } finally {
      await t.deps.knex('tasks').where({ id: task.id }).delete();
    }
    expect(a11y).toEqual([]);
    expect(c.problems).toEqual([]);
  });

  it('the main flow with the keyboard alone: sign in, deploy, follow the log, set a variable, add a domain', async () => {
    const { page } = c;
    /** Presses Tab until the focused element is the one described (its name attribute or its text). */
    const tabTo = async (what: string) => {
      for (let i = 0; i < 120; i++) {
        await page.keyboard.press('Tab');
        const at = await page.evaluate(() => {
          const el = document.activeElement as HTMLInputElement | null;
          return [el?.getAttribute('name') ?? '', el?.textContent?.trim() ?? ''];
        });
        if (at.includes(what)) return;
      }
      throw new Error(`Tab never reached ${what}`);
    };
    await c.context.clearCookies();
    await page.goto(t.baseUrl + env());
    await tabTo('email');
    await page.keyboard.type(w.owner.email);
    await tabTo('password');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'production' }).waitFor();
    await page.getByRole('button', { name: 'Deploy', exact: true }).waitFor();

    await tabTo('Deploy');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/);
    const log = page.getByRole('log', { name: 'Task log' });
    await expect.poll(() => log.textContent(), { timeout: 120_000 }).toContain('==> Live:');
    await tabTo('Open the environment');
    await page.keyboard.press('Enter');
    await page.getByRole('region', { name: 'Live now' }).waitFor();

    await tabTo('Variables');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/variables$/);
    await tabTo('name');
    // A name that does not look secret (SET_BY_KEYBOARD would: *KEY*), so the value stays plain.
    await page.keyboard.type('TYPED_NOT_CLICKED');
    await page.keyboard.press('Tab');
    await page.keyboard.type('yes');
    await page.keyboard.press('Enter');
    await page.getByRole('table', { name: 'Variables' }).getByText('TYPED_NOT_CLICKED').waitFor();
    expect(
      await t.deps.knex('variables').where({ environment_id: w.environment.id, name: 'TYPED_NOT_CLICKED' }).first(),
    ).toMatchObject({ secret: false });

    await tabTo('Domains');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/domains$/);
    await tabTo('hostname');
    await page.keyboard.type('keys.example.test');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'keys.example.test' }).waitFor();
    expect(await t.deps.knex('domains').where({ environment_id: w.environment.id }).pluck('hostname')).toContain(
      'keys.example.test',
    );
    expect(c.problems).toEqual([]);
  });

  it('names tasks and events in words: the activity, the bell, the notification rules', async () => {
    const { page } = c;
    await c.go(`/teams/${w.team.id}/activity`);
    const activity = page.getByRole('list', { name: 'Activity' });
    await activity.getByText('Maintenance off on production (succeeded)').waitFor();
    expect(await activity.textContent()).not.toMatch(/maintenance_off|maintenance_on/);
    await page.getByRole('button', { name: /^Notifications/ }).click();
    const bell = page.getByRole('dialog', { name: 'Notifications' });
    await bell
      .getByText(/^Maintenance off of storefront/)
      .first()
      .waitFor();
    expect(await bell.textContent()).not.toContain('_');
    await c.go(`/projects/${w.project.id}/settings`);
    await page.getByRole('group', { name: 'Restore drill failed' }).waitFor();
    // a token's reminder is the team's: no project rule changes it, so the page offers none and says why
    const tokens = page.getByRole('group', { name: 'Access token expiring' });
    await tokens.getByText("A team's event, not a project's").waitFor();
    expect(await tokens.getByRole('combobox').count()).toBe(0);
    expect(await tokens.getByRole('checkbox').count()).toBe(0);
    await page.getByLabel('Whom to e-mail (app keeps exiting)').waitFor();
    expect(await page.getByRole('region', { name: 'Notification rules' }).textContent()).not.toMatch(
      /task\.failed|backup\.verify_failed|token\.expiring/,
    );
    expect(c.problems).toEqual([]);
  });

  it("says at a glance on the project's page what is live in each environment, its last task and its address", async () => {
    const { page } = c;
    const staging = await agent.post(`/projects/${w.project.id}/environments`, { name: 'staging', git_ref: 'main' });
    expect(staging.status, staging.text).toBe(201);
    const on = await agent.post(`${env()}/maintenance`, { maintenance: true, note: 'Back at noon' });
    expect((await waitForTask(t, w.api, on.body.id)).status).toBe('succeeded');
    const live = (await agent.get(`${env()}/deploy`)).body.live_release as { commit_sha: string };
    const url = (await agent.get(env())).body.url as string;
    await c.go(`/projects/${w.project.id}`);
    const table = page.getByRole('region', { name: 'Environments' }).getByRole('table');
    const production = table.getByRole('row').filter({ has: page.getByRole('link', { name: 'production' }) });
    await production.getByText('Maintenance on', { exact: true }).waitFor();
    // What is live: the commit and its message as text (never markup), the maintenance page, the last task.
    expect(await production.locator('code').textContent()).toBe(live.commit_sha.slice(0, 7));
    await production.getByText('Checkout <b>faster</b> & safer').waitFor();
    expect(await production.locator('b').count()).toBe(0);
    await production.getByText('maintenance page on').waitFor();
    expect(await production.getByRole('link', { name: 'Maintenance on' }).getAttribute('href')).toBe(
      `/tasks/${on.body.id}`,
    );
    await production.getByText('succeeded').waitFor();
    expect(await production.getByRole('link', { name: url }).getAttribute('href')).toBe(url);
    // A new environment: nothing live, no task.
    const fresh = table.getByRole('row').filter({ has: page.getByRole('link', { name: 'staging' }) });
    await fresh.getByText('Nothing live yet').waitFor();
    await fresh.getByText('No tasks yet').waitFor();
    expect(await fresh.getByRole('link', { name: 'staging' }).getAttribute('href')).toBe(
      `/environments/${staging.body.id}`,
    );
    await c.screenshot('project-at-a-glance');
    await checkA11y('project, environments at a glance');
    await checkNarrow(c, 'project-at-a-glance');
    // A task that runs: the table follows it to its end with no reload (a row of the tasks table, as the bell's test).
    const running = await runningBackupRow('glance');
    try {
      await c.go(`/projects/${w.project.id}`);
      await production.getByRole('link', { name: 'Back up' }).waitFor();
      await production.getByText('running', { exact: true }).waitFor();
      await t.deps.knex('tasks').where({ id: running.id }).update({ status: 'succeeded', finished_at: new Date() });
      await production.getByText('succeeded', { exact: true }).waitFor({ timeout: 10_000 });
    } finally {
      await t.deps.knex('tasks').where({ id: running.id }).delete();
    }
    const off = await agent.post(`${env()}/maintenance`, { maintenance: false });
    expect((await waitForTask(t, w.api, off.body.id)).status).toBe('succeeded');
    expect(c.problems).toEqual([]);
  });

  it('every screen has no serious or critical axe violation, in both colour schemes, at 1280 px; none scrolls sideways at 390 px', async () => {
    const { page } = c;
    const task = await t.deps.knex('tasks').where({ environment_id: w.environment.id }).first('id');
    const paths = [
      '/',
      '/account',
      '/account/tokens',
      '/account/ssh-keys',
      `/tasks/${task.id}`,
      ...TEAM_TABS.map(([p]) => `/teams/${w.team.id}${p}`),
      ...PROJECT_TABS.map(([p]) => `/projects/${w.project.id}${p}`),
      ...ENVIRONMENT_TABS.map(([p]) => `${env()}${p}`),
    ];
    const found: string[] = [];
    const sideways: string[] = [];
    for (const p of paths) {
      await c.go(p);
      await c.settled();
      found.push(...(await axeViolations(page, p)));
      // Each screen as a person sees it, at both widths (looked at before issue 31 closed).
      const name = `every${p
        .replace(/[0-9a-f-]{36}/g, '')
        .replace(/\/+/g, '-')
        .replace(/-$/, '')}`;
      await c.screenshot(name);
      await page.setViewportSize({ width: 390, height: 844 });
      if ((await horizontalOverflow(page)) > 0) sideways.push(p);
      await page.setViewportSize({ width: 1280, height: 900 });
    }
    expect(found).toEqual([]);
    expect(sideways).toEqual([]);
    expect(c.problems).toEqual([]);
    // ~30 screens, each waited until nothing loads, checked in two schemes and photographed: ~35 s on a quiet machine
  }, 180_000);

  it('lists the last 10 tasks, newest first, each with its status and how long it took', async () => {
    const { page } = c;
    const base = { team_id: w.team.id, project_id: w.project.id, environment_id: w.environment.id };
    // Newer than every task before (the newest come first).
    const started = Date.now() + 1_000;
    await t.deps.knex('tasks').insert(
      Array.from({ length: 11 }, (_, i) => ({
        ...base,
        kind: 'backups',
        type: 'backup',
        status: i === 10 ? 'failed' : 'succeeded',
        account_user_id: w.owner.id,
        account_via: 'session',
        workflow_id: `overview-ten-${i}`,
        created_at: new Date(started + i * 1_000),
        started_at: new Date(started + i * 1_000),
        // the one before the newest took 560 ms: a tenth of a second is shown under 10 s (never "0 s")
        finished_at: new Date(started + i * 1_000 + (i === 9 ? 560 : 3_000)),
      })),
    );
    await c.go(env());
    const rows = page.getByRole('region', { name: 'Recent tasks' }).getByRole('row');
    await rows.nth(1).getByText('failed').waitFor();
    // A header row and ten tasks: the newest (the failed backup) first.
    expect(await rows.count()).toBe(11);
    expect(await rows.nth(1).textContent()).toMatch(/^Back up\s*failed.*[^.]3 s$/);
    expect(await rows.nth(2).textContent()).toMatch(/^Back up\s*succeeded.*[^.]0\.6 s$/);
    expect(c.problems).toEqual([]);
  });
  it('says when a live app keeps exiting, on the project page and the environment page, until a release that stays up is live', async () => {
    const { page } = c;
    const flaky = await newEnvironment('flaky');
    const deploy = () => deployTo(flaky.id);
    // it answers, so it goes live, then exits with code 5, and so does every restart
    commitWebApp(w.repo.dir, EXITS_AFTER_A_MOMENT, 'exits after 0.7 s');
    await deploy();
    await c.go(`/projects/${w.project.id}`);
    const row = page
      .getByRole('region', { name: 'Environments' })
      .getByRole('row')
      .filter({ has: page.getByRole('link', { name: 'flaky' }) });
    // the table reads the records again every 15 s: at most that long after the first exit
    await row.getByText('keeps exiting', { exact: true }).waitFor({ timeout: 20_000 });
    expect(await row.textContent()).toMatch(/keeps exiting code 5 · \d+ exits? since /);
    await c.go(`/environments/${flaky.id}`);
    const notice = page.getByRole('alert').filter({ hasText: 'The app keeps exiting' });
    await notice.waitFor();
    expect(await notice.textContent()).toMatch(
      /^The app keeps exiting \(code 5, \d+ exits? since .+, the last at .+\)\. Its host restarts it, waiting up to 30 s between tries, and visitors get 503 meanwhile\. What it printed goes to the project's log destination: fix it and deploy\.$/,
    );
    expect(await notice.getByRole('link', { name: "project's log destination" }).getAttribute('href')).toBe(
      `/projects/${w.project.id}/logs`,
    );
    await c.screenshot('app-keeps-exiting');
    await checkA11y('environment, an app that keeps exiting');
    // a release that stays up: the notice goes (it is read every 5 s while shown), with no reload
    w.repo.commit('steady');
    await deploy();
    await notice.waitFor({ state: 'detached', timeout: 10_000 });
    expect(c.problems).toEqual([]);
  });

  it('says which command serves what is live, and when a release has none, that visitors get 503 and what to do', async () => {
    const { page } = c;
    const bare = await newEnvironment('bare');
    const deploy = () => deployTo(bare.id);
    await deploy();
    await c.go(`/environments/${bare.id}`);
    const live = page.getByRole('region', { name: 'Live now' });
    await live.getByText('Web process', { exact: true }).waitFor();
    expect(await live.locator('dd code').last().textContent()).toBe('node server.js');
    const notice = live.getByRole('status').filter({ hasText: 'This release has no web process' });
    expect(await notice.count()).toBe(0);
    // a commit without service.yaml goes live with no web process: before, "Live now" showed it as any other
    rmSync(path.join(w.repo.dir, 'service.yaml'));
    const sha = commitAll(w.repo.dir, 'no manifest');
    const taskId = await deploy();
    await c.go(`/environments/${bare.id}`);
    await live.getByText(sha.slice(0, 7)).waitFor();
    await notice.waitFor();
    expect(await notice.textContent()).toBe(
      'This release has no web process (no web in its service.yaml, or no service.yaml), so visitors get 503 “no web process”. Add web: "<the command that starts it>" (it gets PORT) to service.yaml at the repository root, then deploy; its deploy\'s log says more.',
    );
    expect(await notice.getByRole('link', { name: "its deploy's log" }).getAttribute('href')).toBe(`/tasks/${taskId}`);
    expect(await live.getByText('Web process', { exact: true }).count()).toBe(0);
    await c.screenshot('live-without-web-process');
    // and on the project's page, in its row
    await c.go(`/projects/${w.project.id}`);
    const row = page
      .getByRole('region', { name: 'Environments' })
      .getByRole('row')
      .filter({ has: page.getByRole('link', { name: 'bare' }) });
    await row.getByText('no web process', { exact: true }).waitFor();
    expect(await row.textContent()).toContain('no web process visitors get 503');
    const others = page.getByRole('region', { name: 'Environments' }).getByRole('row').filter({ hasNotText: 'bare' });
    expect(await others.getByText('no web process', { exact: true }).count()).toBe(0);
    await checkA11y('environment, a release with no web process');
    expect(c.problems).toEqual([]);
  });

  it('says whether the app runs with the saved variables; after "Apply" the page says it does, with no reload', async () => {
    const { page } = c;
    // production's processes were started before the keyboard test saved TYPED_NOT_CLICKED: its overview says so
    await c.go(env());
    const pending = page
      .getByRole('region', { name: 'Live now' })
      .getByRole('status')
      .filter({ hasText: 'Saved variable changes are not live yet' });
    await pending.waitFor();
    expect(await pending.textContent()).toBe('Saved variable changes are not live yet: apply them or deploy.');
    await pending.getByRole('link', { name: 'apply them' }).click();
    await page.waitForURL(`${t.baseUrl}${env()}/variables`);
    const changed = page.getByRole('status').filter({ hasText: 'not live yet' });
    await changed.waitFor();
    expect(await changed.textContent()).toMatch(
      /^Changed since the app started \(.+\): not live yet\. “Apply” restarts it with these, one instance at a time; so does the next deploy\.$/,
    );
    await c.screenshot('variables-not-live-yet');
    await checkA11y('variables, saved but not live');
    await page.getByRole('button', { name: 'Apply', exact: true }).click();
    await page.getByRole('link', { name: 'follow the task' }).waitFor();
    await page
      .getByRole('status')
      .filter({ hasText: 'The app runs with these variables' })
      .waitFor({ timeout: 30_000 });
    await changed.waitFor({ state: 'detached' });
    await c.go(env());
    await page.getByRole('region', { name: 'Live now' }).getByText('Web process', { exact: true }).waitFor();
    await c.settled(); // the variables are read once the page is quiet
    expect(await pending.count()).toBe(0);
    const served = await t.deps.knex('environments').where({ id: w.environment.id }).first('variables_live');
    expect(served.variables_live).toMatchObject({ digest: expect.any(String) });
    expect(c.problems).toEqual([]);
  });

  it('a deploy that failed says on its page what still serves, and what to do next', async () => {
    const { page } = c;
    const bare = await t.deps.knex('environments').where({ project_id: w.project.id, name: 'bare' }).first('id');
    const live = (await agent.get(`/environments/${bare.id}/deploy`)).body.live_release;
    writeFileSync(path.join(w.repo.dir, 'service.yaml'), 'build: ["exit 3"]\nweb: node server.js\n');
    commitAll(w.repo.dir, 'a build that fails');
    const res = await agent.post(`/environments/${bare.id}/deploy`);
    expect(res.status, res.text).toBe(202);
    expect((await waitForTask(t, w.api, res.body.id)).status).toBe('failed');
    await c.go(`/tasks/${res.body.id}`);
    const after = page.getByRole('status').filter({ hasText: 'keeps serving' });
    await after.waitFor();
    expect(await after.textContent()).toBe(
      `Nothing changed on the environment: ${live.commit_sha.slice(0, 7)} “${live.commit_message}” keeps serving. Fix what the log below shows, commit, and deploy again.`,
    );
    await c.screenshot('deploy-failed');
    await checkA11y('a failed deploy');
    // a task that succeeded says nothing of the kind
    await c.go(`/tasks/${live.went_live.task_id}`);
    await page.getByText('succeeded', { exact: true }).first().waitFor();
    expect(await page.getByText('keeps serving').count()).toBe(0);
    expect(c.problems).toEqual([]);
  });
});
