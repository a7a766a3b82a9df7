import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { repositoriesDir, useTestContext } from '../helpers/context';
import { type AppRepo, createAppRepo } from '../helpers/deploy-fixtures';
import { type ConsoleBrowser, eachTestAnswersForProblems, checkNarrow, openConsole } from '../helpers/console-browser';

/**
 * The console's main flow in Debian's chromium against the real system (API, Temporal worker, edge,
 * SMTP on loopback, a git repository): sign-up with the e-mailed code, a team, a project, its repository,
 * an environment, "Deploy" with the log followed while the build runs, the app's link answering, a pasted
 * .env previewed line by line before "Import", a domain with its TXT record, a token shown once and gone
 * after a reload, and a restore that asks for the password. Any page error, 5xx or request to another
 * origin fails it.
 */
const t = useTestContext({ worker: true, smtp: true });
let c: ConsoleBrowser;
let repo: AppRepo;
const email = `console-${Date.now()}@example.test`;
const password = 'a long console password';
const ids: { team?: string; project?: string; environment?: string } = {};
let lastTask = '';

beforeAll(async () => {
  const root = mkdtempSync(path.join(repositoriesDir(), 'console-'));
  const gateDir = mkdtempSync(path.join(inject('runDir'), 'shared', 'gate-'));
  chmodSync(gateDir, 0o755);
  repo = createAppRepo(root, gateDir);
  repo.commit('v1', { gated: true });
  c = await openConsole(t);
}, 180_000);

afterAll(async () => {
  await c?.close();
});

const idFrom = (url: string, kind: string) => new RegExp(`/${kind}/([0-9a-f-]{36})`).exec(url)?.[1];

describe.sequential('the console, end to end', () => {
  eachTestAnswersForProblems(() => c);
  it('signs up with the e-mailed code and lands on the dashboard', async () => {
    const { page } = c;
    await page.goto(`${t.baseUrl}/sign-up`);
    await page.getByLabel('Name').fill('Ada Console');
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel('Password').fill(password);
    await c.screenshot('sign-up');
    await page.getByRole('button', { name: 'Sign up', exact: true }).click();
    const mail = await t.smtp!.waitFor((m) => m.to.includes(email));
    const code = /^Confirmation code: (\S+)$/m.exec(mail.text)![1];
    await page.getByLabel('Confirmation code').fill(code);
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    // no team yet: the Projects card says what comes first
    await page.getByText('A project belongs to a team: create a team first, or accept an invitation to one.').waitFor();
    const user = await t.deps.knex('users').where({ email }).first();
    expect(user.email_confirmed_at).not.toBeNull();
    expect(c.problems).toEqual([]);
  });

  it('creates a team, a project with its repository, and an environment', async () => {
    const { page } = c;
    await page.getByLabel("New team's name").fill('Console team');
    await page.getByRole('button', { name: 'Create team' }).click();
    await page.waitForURL(/\/teams\/[0-9a-f-]{36}$/);
    ids.team = idFrom(page.url(), 'teams');
    await c.screenshot('team');
    // the team's Projects tab creates the first project where the person is
    await page.getByText('No projects yet.').waitFor();
    await page.getByLabel("New project's name").fill('shop');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.waitForURL(/\/projects\/[0-9a-f-]{36}$/);
    ids.project = idFrom(page.url(), 'projects');
    await page.getByLabel('Repository address').fill(repo.dir);
    await page.getByRole('button', { name: 'Connect', exact: true }).click();
    await page.getByText('The webhook secret, shown once').waitFor();
    expect((await t.deps.knex('projects').where({ id: ids.project }).first()).repository_url).toBe(repo.dir);
    await page.getByLabel('Environment name').fill('production');
    await page.getByRole('button', { name: 'Create environment' }).click();
    await page.waitForURL(/\/environments\/[0-9a-f-]{36}$/);
    ids.environment = idFrom(page.url(), 'environments');
    const env = await t.deps.knex('environments').where({ id: ids.environment }).first();
    expect(env).toMatchObject({ name: 'production', project_id: ids.project, team_id: ids.team });
    expect(c.problems).toEqual([]);
  });

  it('deploys, following the log while the build runs, and the app link answers', async () => {
    const { page } = c;
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/);
    const taskId = idFrom(page.url(), 'tasks')!;
    lastTask = taskId;
    const log = page.getByRole('log', { name: 'Task log' });
    // The build waits for the gate: what the page shows meanwhile came from polling the running task.
    await expect.poll(() => log.textContent(), { timeout: 90_000 }).toContain('==> Building');
    expect(await page.locator('[data-status]').textContent()).toBe('running');
    await c.screenshot('task-running');
    writeFileSync(repo.gate, '');
    await expect.poll(() => page.locator('[data-status]').textContent(), { timeout: 120_000 }).toBe('succeeded');
    await expect.poll(() => log.textContent(), { timeout: 10_000 }).toContain('==> Live:');
    // The page shows the log as written, once, in order.
    const rows = await t.deps.knex('task_logs').where({ task_id: taskId }).orderBy('seq');
    expect(await log.textContent()).toBe(rows.map((r: { chunk: string }) => r.chunk).join(''));
    await c.screenshot('task');

    await page.getByRole('link', { name: 'Open the environment' }).click();
    const link = page.locator(`a[href^="http://"][target="_blank"]`).first();
    const href = (await link.getAttribute('href'))!;
    const [popup] = await Promise.all([page.context().waitForEvent('page'), link.click()]);
    await popup.waitForLoadState();
    expect((await popup.textContent('body'))?.trim()).toBe('v1');
    await popup.close();
    expect(href).toMatch(/^http:\/\/localhost:\d+$/);
    await page.getByRole('heading', { name: 'Recent tasks' }).waitFor();
    await page.getByText('succeeded').first().waitFor();
    const shot = await c.screenshot('environment');
    if (process.env.UPDATE_CONSOLE_SCREENSHOT === '1') copyFileSync(shot, path.join('docs', 'console-environment.png'));
    expect(c.problems).toEqual([]);
  });

  it('previews a pasted .env line by line before "Import", then imports it', async () => {
    const { page } = c;
    await page.getByRole('link', { name: 'Variables' }).click();
    await page.waitForURL(/\/variables$/);
    await page.getByLabel('Name', { exact: true }).fill('GREETING');
    await page.getByLabel('Value', { exact: true }).fill('hey');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const table = page.getByRole('table', { name: 'Variables' });
    await table.getByText('GREETING').waitFor();
    // A refusal of the parse shows the API's reason beside the field.
    const text = page.getByLabel('.env text');
    await text.fill('GREETING=hello\nGREETING=again\n');
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.getByText('GREETING is given twice (first on line 1)').waitFor();
    await text.fill('# the shop\nGREETING=hello\n\nexport COLOR="blue"\n');
    await page.getByRole('button', { name: 'Preview' }).click();
    const preview = page.getByRole('table', { name: 'Preview of the import' });
    await preview.waitFor();
    const rows = () =>
      preview
        .locator('tbody tr')
        .evaluateAll((trs) => trs.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)));
    // Values are masked until shown; neither name looks secret, so neither is checked as secret.
    expect(await rows()).toEqual([
      ['2', 'GREETING', '•••••••• Show', 'Set already: kept (tick "Overwrite" to replace)', 'GREETING is secret'],
      ['4', 'COLOR', '•••••••• Show', 'New variable', 'COLOR is secret'],
    ]);
    expect(await page.getByLabel('GREETING is secret').isChecked()).toBe(false);
    await page.getByRole('button', { name: 'Show the value of COLOR' }).click();
    expect((await rows())[1][2]).toBe('blue Hide');
    await page.getByLabel('Overwrite values set already').check();
    expect((await rows())[0][3]).toBe('Replaces the value set now');
    // Nothing changed before "Import".
    const stored = () =>
      t.deps.knex('variables').where({ environment_id: ids.environment }).orderBy('name').pluck('name');
    expect(await stored()).toEqual(['GREETING']);
    await c.screenshot('variables-preview');
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await page.getByText('Imported: 1 added, 1 replaced').waitFor();
    await table.getByText('COLOR').waitFor();
    expect(await stored()).toEqual(['COLOR', 'GREETING']);
    await page.getByRole('button', { name: 'Show the value of GREETING' }).click();
    await table.getByText('hello').waitFor();
    expect(c.problems).toEqual([]);
  });

  it('adds a domain and shows the TXT record to create, with a copy button', async () => {
    const { page } = c;
    await page.getByRole('link', { name: 'Domains' }).click();
    await page.getByLabel('Hostname').fill('shop.example.test');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.getByRole('heading', { name: 'shop.example.test' }).waitFor();
    const row = await t.deps.knex('domains').where({ hostname: 'shop.example.test' }).first();
    expect(row.environment_id).toBe(ids.environment);
    const res = await fetch(`${t.apiUrl}/environments/${ids.environment}/domains`, {
      headers: { cookie: await cookieHeader() },
    });
    const [domain] = (await res.json()).data;
    await page.getByText(domain.verification.value, { exact: true }).first().waitFor();
    await page.getByText(domain.verification.name, { exact: true }).first().waitFor();
    await page.getByRole('button', { name: 'Copy value' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    await c.screenshot('domains');
    expect(c.problems).toEqual([]);
  });

  it('shows a new token once, with a copy button; after a reload only its record is listed', async () => {
    const { page } = c;
    await page.goto(`${t.baseUrl}/account/tokens`);
    await page.getByLabel('What it is for').fill('deploys from CI');
    await page.getByRole('button', { name: 'Create token' }).click();
    const token = (await page.locator('[data-token]').textContent())!;
    expect(token).toMatch(/^vcp_/);
    await page.getByRole('button', { name: 'Copy', exact: true }).waitFor();
    // It works: the API knows the caller by it.
    const me = await fetch(`${t.apiUrl}/me`, { headers: { authorization: `Bearer ${token}` } });
    expect((await me.json()).email).toBe(email);
    await c.screenshot('tokens');
    await page.reload();
    await page.getByText('deploys from CI').waitFor();
    expect(await page.content()).not.toContain(token);
    expect(await page.locator('[data-token]').count()).toBe(0);
    expect(c.problems).toEqual([]);
  });

  it('backs up, then restores over the protected environment after asking for the password', async () => {
    const { page } = c;
    // local destinations as the operator allows them (BACKUP_LOCAL_ROOTS): under the test run's directory
    t.deps.config.backupLocalRoots = [path.join(t.dataDir, '..')];
    const dir = path.join(t.dataDir, '..', `console-dest-${Date.now()}`);
    mkdirSync(dir);
    await page.goto(`${t.baseUrl}/teams/${ids.team}/backup-destinations`);
    await page.getByLabel('Name').fill('disk');
    await page.getByLabel('Path').fill(dir);
    await page.getByRole('button', { name: 'Add destination' }).click();
    await page.getByText('disk').first().waitFor();
    await page.goto(`${t.baseUrl}/environments/${ids.environment}/backups`);
    await page.getByLabel('Destination').waitFor();
    await page.getByRole('button', { name: 'Back up now' }).click();
    await page.waitForURL(/\/tasks\//);
    await expect.poll(() => page.locator('[data-status]').textContent(), { timeout: 120_000 }).toBe('succeeded');
    await page.goto(`${t.baseUrl}/environments/${ids.environment}/backups`);
    // A sign-in older than the restore's limit: the API answers reauthentication_required.
    const user = await t.deps.knex('users').where({ email }).first();
    await t.deps
      .knex('sessions')
      .where({ user_id: user.id })
      .update({ authenticated_at: new Date(Date.now() - 3 * 3600_000) });
    await page.getByRole('button', { name: 'Restore', exact: true }).first().click();
    const pw = page.getByLabel('Your password');
    await pw.waitFor();
    await c.screenshot('backups-restore');
    expect(await t.deps.knex('tasks').where({ type: 'restore' })).toEqual([]);
    await pw.fill(password);
    await page.getByRole('button', { name: 'Restore', exact: true }).last().click();
    await page.waitForURL(/\/tasks\//);
    await expect.poll(() => page.locator('[data-status]').textContent(), { timeout: 120_000 }).toBe('succeeded');
    expect(await t.deps.knex('tasks').where({ type: 'restore', status: 'succeeded' })).toHaveLength(1);
    expect(c.problems).toEqual([]);
  });

  it('runs a restore drill from beside a snapshot: "verified just now", or the drill\'s error, also on the overview', async () => {
    const { page } = c;
    await page.goto(`${t.baseUrl}/environments/${ids.environment}/backups`);
    await page.getByText('not verified yet').first().waitFor();
    await page.getByRole('button', { name: 'Verify', exact: true }).first().click();
    await page.waitForURL(/\/tasks\//);
    await expect.poll(() => page.locator('[data-status]').textContent(), { timeout: 120_000 }).toBe('succeeded');
    await page.goto(`${t.baseUrl}/environments/${ids.environment}/backups`);
    await page.getByText('verified just now').first().waitFor();
    const [newest] = await t.deps
      .knex('backups')
      .where({ environment_id: ids.environment, status: 'available' })
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ]);
    await t.deps
      .knex('backups')
      .where({ id: newest.id })
      .update({
        verified_at: new Date(Date.now() - 3 * 3600_000 - 60_000),
        verify_error: 'table public.notes is missing',
      });
    await page.reload();
    await page.getByText('restore drill failed 3 h ago: table public.notes is missing').waitFor();
    await page.goto(`${t.baseUrl}/environments/${ids.environment}`);
    await page.getByRole('alert').filter({ hasText: 'table public.notes is missing' }).waitFor();
    await t.deps.knex('backups').where({ id: newest.id }).update({ verified_at: null, verify_error: null });
    expect(c.problems).toEqual([]);
  });

  it('downloads a backup (the encrypted snapshot), then deletes it after its confirmation', async () => {
    const { page } = c;
    const backups = () => t.deps.knex('backups').where({ environment_id: ids.environment, status: 'available' });
    const before = await backups().orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ]);
    await page.goto(`${t.baseUrl}/environments/${ids.environment}/backups`);
    const downloading = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Download' }).first().click();
    const file = await downloading;
    expect(file.suggestedFilename()).toBe(`snapshot-${before[0].id}.vcb`);
    const saved = path.join(t.dataDir, '..', file.suggestedFilename());
    await file.saveAs(saved);
    expect(statSync(saved).size).toBe(Number(before[0].size_bytes));
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Delete', exact: true }).first().click();
    await expect.poll(async () => (await backups()).length, { timeout: 30_000 }).toBe(before.length - 1);
    expect(await t.deps.knex('backups').where({ id: before[0].id }).first()).toBeUndefined();
    await expect.poll(() => page.getByRole('button', { name: 'Download' }).count()).toBe(before.length - 1);
    expect(c.problems).toEqual([]);
  });

  it('deploys a new commit, rolls back, and redeploys skipping the deploy steps', async () => {
    const { page } = c;
    const env = await t.deps.knex('environments').where({ id: ids.environment }).first();
    const app = async () => (await fetch(`http://127.0.0.1:${env.port}/`)).text();
    const finish = async () => {
      await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/);
      await expect.poll(() => page.locator('[data-status]').textContent(), { timeout: 120_000 }).toBe('succeeded');
      return idFrom(page.url(), 'tasks')!;
    };
    repo.commit('v2');
    await page.goto(`${t.baseUrl}/environments/${ids.environment}`);
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    await finish();
    expect((await app()).trim()).toBe('v2');

    await page.goto(`${t.baseUrl}/environments/${ids.environment}`);
    await page.getByRole('button', { name: 'Rollback' }).click();
    const rollback = await finish();
    expect((await t.deps.knex('tasks').where({ id: rollback }).first()).type).toBe('rollback');
    expect((await app()).trim()).toBe('v1');

    const runs = repo.deployRuns();
    await page.goto(`${t.baseUrl}/environments/${ids.environment}`);
    await page.getByLabel('Skip the deploy steps').check();
    await page.getByRole('button', { name: 'Redeploy' }).click();
    const redeploy = await finish();
    expect((await t.deps.knex('tasks').where({ id: redeploy }).first()).params).toMatchObject({ skip_steps: true });
    expect(repo.deployRuns()).toBe(runs);
    expect(c.problems).toEqual([]);
  });

  it('is usable at 390 px wide: the main pages do not scroll sideways; every field is labelled', async () => {
    const { page } = c;
    for (const [name, url] of [
      ['dashboard', '/'],
      ['environment', `/environments/${ids.environment}`],
      ['environment-variables', `/environments/${ids.environment}/variables`],
      ['environment-domains', `/environments/${ids.environment}/domains`],
      ['project', `/projects/${ids.project}`],
      ['account-tokens', '/account/tokens'],
      ['environment-backups', `/environments/${ids.environment}/backups`],
      ['environment-machines', `/environments/${ids.environment}/machines`],
      ['team-people', `/teams/${ids.team}/people`],
      ['task', `/tasks/${lastTask}`],
    ]) {
      await page.goto(t.baseUrl + url);
      await page.locator('h1').first().waitFor();
      await c.settled();
      await checkNarrow(c, `flow-${name}`);
    }
    expect(c.problems).toEqual([]);
  });
});

async function cookieHeader(): Promise<string> {
  const cookies = await c.context.cookies();
  return cookies.map((k) => `${k.name}=${k.value}`).join('; ');
}
