import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSubscription } from '../../db/queries/subscriptions';
import { useTestContext } from '../helpers/context';
import {
  type ConsoleBrowser,
  checkNarrow,
  eachTestAnswersForProblems,
  openConsole,
  openConsoleAs,
} from '../helpers/console-browser';
import { type AppRepo, createEnvironment, createSharedAppRepo } from '../helpers/deploy-fixtures';
import { addMember, createAccessToken, createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import type { Agent } from '../helpers/http';
import { answerDroppingRelay } from '../helpers/answer-dropping-relay';

/**
 * The team, project and account screens that the other screen tests leave out: subscriptions and their
 * cancel confirmation, variables with their sources and a write-only secret, "Apply", renames, a member
 * removed, the repository's reconnect, registries, the backup window, project cancel and delete with their
 * confirmations, an expired token still listed (the environment's: screens-environment.test.ts). Each is
 * done in chromium and checked in PostgreSQL or the API. No worker runs: tasks stay pending.
 */
const t = useTestContext({ smtp: true });
let c: ConsoleBrowser;
let owner: Awaited<ReturnType<typeof createUser>>;
let agent: Agent;
let team: Awaited<ReturnType<typeof createTeam>>;
let project: Awaited<ReturnType<typeof createProject>>;
let production: Awaited<ReturnType<typeof createEnvironment>>;
let repo: AppRepo;

beforeAll(async () => {
  repo = createSharedAppRepo();
  repo.commit('v1');
  owner = await createUser(t, { name: 'Rita Rest' });
  team = await createTeam(t, owner, 'Rest team');
  project = await createProject(t, team, { name: 'rest-shop', repository_url: repo.dir });
  production = await createEnvironment(t, project, { name: 'production' });
  agent = await sessionAgent(t, owner);
  // The confirmations (removing a member, deleting a project) are accepted.
  c = await openConsoleAs(t, agent, { acceptDialogs: true });
}, 180_000);

afterAll(async () => {
  await c?.close();
});

const go = (path: string) => c.go(path);

describe.sequential('the rest of the console screens', () => {
  eachTestAnswersForProblems(() => c);

  it('billing: a subscription is cancelled only after its confirmation, which says when it ends', async () => {
    const { page } = c;
    // A paid thing's subscription, as the machines' and services' changes open them.
    await openSubscription(t.deps.knex, {
      teamId: team.id,
      projectId: project.id,
      environmentId: production.id,
      kind: 'server',
      item: 'Web server, plan small (production of rest-shop)',
      monthlyPrice: 12,
      currency: (await agent.get(`/teams/${team.id}/billing`)).body.currency,
    });
    const subs = (await agent.get(`/teams/${team.id}/billing`)).body.subscriptions as Array<{
      order: string;
      item: string;
    }>;
    expect(subs.length).toBeGreaterThan(0);
    const sub = subs[0];
    const preview = (await agent.get(`/teams/${team.id}/subscriptions/${sub.order}/cancel`)).body;
    await go(`/teams/${team.id}/billing`);
    const row = page.getByRole('listitem').filter({ hasText: sub.item });
    await row.getByRole('button', { name: 'Cancel subscription' }).click();
    const dialog = page.getByRole('alertdialog', { name: 'Cancel the subscription' });
    await dialog.getByText(`Cancel ${sub.item}?`).waitFor();
    // When it ends, as a person reads it (to the minute, in UTC), not as an ISO timestamp.
    const ends = new Date(preview.ends_at as string).toISOString();
    expect(await dialog.textContent()).toContain(`${ends.slice(0, 10)} ${ends.slice(11, 16)} UTC`);
    expect(await dialog.textContent()).not.toContain(preview.ends_at);
    // The API's instruction to its clients is not the person's to read.
    expect(preview.ends).toContain('{"confirm": true}');
    expect(await dialog.textContent()).not.toContain('"confirm"');
    await c.screenshot('team-billing-cancel');
    // "Keep it" closes the question and changes nothing.
    await dialog.getByRole('button', { name: 'Keep it' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect((await t.deps.knex('subscriptions').where({ order: sub.order }).first()).status).toBe('active');
    await row.getByRole('button', { name: 'Cancel subscription' }).click();
    await dialog.getByRole('button', { name: 'Confirm cancellation' }).click();
    await dialog.waitFor({ state: 'detached' });
    await row.getByText('cancelling', { exact: true }).waitFor();
    const after = await t.deps.knex('subscriptions').where({ order: sub.order }).first();
    expect(after.status).toBe('cancelling');
    expect(after.cancel_at.toISOString()).toBe(preview.ends_at);
    expect(await row.getByRole('button', { name: 'Cancel subscription' }).count()).toBe(0);
    await checkNarrow(c, 'team-billing');
    expect(c.problems).toEqual([]);
  });

  it("variables: each value's source; a secret is write-only; Apply starts the task; team and project renamed, a member removed", async () => {
    const { page } = c;
    const review = await createEnvironment(t, project, { name: 'review' });
    expect((await agent.post(`/projects/${project.id}/variables`, { name: 'REGION', value: 'eu-west' })).status).toBe(
      201,
    );
    await go(`/environments/${review.id}/variables`);
    const table = page.getByRole('table', { name: 'Variables' });
    await table.getByRole('row').filter({ hasText: 'REGION' }).getByText('project', { exact: true }).waitFor();
    // "Secret" follows the name as it is typed (the import preview's pattern): not for PORT, yes for API_KEY.
    const secretBox = page.getByLabel('Secret (write-only)');
    await page.getByLabel('Name', { exact: true }).fill('PORT');
    expect(await secretBox.isChecked()).toBe(false);
    await page.getByLabel('Name', { exact: true }).fill('API_KEY');
    expect(await secretBox.isChecked()).toBe(true);
    await page.getByLabel('Value', { exact: true }).fill('kept-out-of-pages');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    const secretRow = table.getByRole('row').filter({ hasText: 'API_KEY' });
    await secretRow.getByText('secret (write-only)').waitFor();
    await secretRow.getByText('environment', { exact: true }).waitFor();
    expect(await page.content()).not.toContain('kept-out-of-pages');
    const listed = (await agent.get(`/environments/${review.id}/variables`)).body.data;
    expect(listed.find((v: { name: string }) => v.name === 'API_KEY')).toMatchObject({ secret: true, value: null });
    await page.getByRole('button', { name: 'Apply', exact: true }).click();
    const follow = page.getByRole('link', { name: 'follow the task' });
    await follow.waitFor();
    const applyId = (await follow.getAttribute('href'))!.split('/').pop();
    const applied = await t.deps.knex('tasks').where({ id: applyId }).first();
    expect(applied).toMatchObject({ environment_id: review.id, type: 'apply_variables', status: 'pending' });
    // The form is empty again; API_TOKEN checks the box, which the user can uncheck, and it stays so.
    await page.getByLabel('Name', { exact: true }).waitFor();
    expect(await page.getByLabel('Name', { exact: true }).inputValue()).toBe('');
    expect(await secretBox.isChecked()).toBe(false);
    await page.getByLabel('Name', { exact: true }).fill('API_TOKEN');
    expect(await secretBox.isChecked()).toBe(true);
    await secretBox.uncheck();
    await page.getByLabel('Name', { exact: true }).fill('API_TOKEN_2');
    expect(await secretBox.isChecked()).toBe(false);
    // Tasks are named by the registry's label, not by their type.
    await follow.click();
    await page.getByRole('heading', { name: 'Task: Apply variables' }).waitFor();
    // the tab names the task, its environment and its project: people keep many tabs open
    await expect.poll(() => page.title()).toBe('Apply variables · review · rest-shop');
    await go(`/environments/${review.id}`);
    const recent = page.getByRole('region', { name: 'Recent tasks' });
    await recent.getByRole('link', { name: 'Apply variables', exact: true }).waitFor();
    expect(await recent.textContent()).not.toContain('apply_variables');

    await go(`/teams/${team.id}/settings`);
    await page.getByLabel('Team name').fill('Rest team, renamed');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('heading', { name: 'Rest team, renamed' }).waitFor();
    expect((await t.deps.knex('teams').where({ id: team.id }).first()).name).toBe('Rest team, renamed');
    await go(`/projects/${project.id}/settings`);
    await page.getByLabel('Project name').fill('rest-store');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('heading', { name: 'rest-store' }).waitFor();
    expect((await t.deps.knex('projects').where({ id: project.id }).first()).name).toBe('rest-store');
    const colleague = await createUser(t, { name: 'Leaving Colleague' });
    await addMember(t, team, colleague, 'developer');
    await go(`/teams/${team.id}/people`);
    await page
      .getByRole('listitem')
      .filter({ hasText: 'Leaving Colleague' })
      .getByRole('button', { name: 'Remove' })
      .click();
    await page.getByText('Leaving Colleague').waitFor({ state: 'detached' });
    expect(await t.deps.knex('memberships').where({ team_id: team.id, user_id: colleague.id })).toEqual([]);
    expect(c.problems).toEqual([]);
  });

  it('"Apply" whose answer the network lost is sent again under its Idempotency-Key: one task, and the page follows it', async () => {
    const env = await createEnvironment(t, project, { name: 'lost-answer' });
    // The browser reaches the API through a relay that drops the connection when the apply's first answer comes back:
    // the task started, the page never heard.
    const relay = await answerDroppingRelay(Number(new URL(t.baseUrl).port), (head) =>
      head.startsWith(`POST /api/vc/v1/environments/${env.id}/variables/apply `),
    );
    const lossy = await openConsoleAs(t, agent, { via: relay.url });
    try {
      await lossy.go(`/environments/${env.id}/variables`);
      await lossy.page.getByRole('button', { name: 'Apply', exact: true }).click();
      const follow = lossy.page.getByRole('link', { name: 'follow the task' });
      await follow.waitFor();
      expect(relay.dropped()).toBe(true);
      // the console sent it again: on a fresh connection Chromium never does so by itself
      expect(relay.matched()).toBe(2);
      const tasks = await t.deps.knex('tasks').where({ environment_id: env.id, type: 'apply_variables' });
      expect(tasks).toHaveLength(1);
      expect(await follow.getAttribute('href')).toBe(`/tasks/${tasks[0].id}`);
      // what the browser logs of the answer lost, and nothing else
      expect(lossy.problems).toEqual(['console error: Failed to load resource: net::ERR_EMPTY_RESPONSE']);
    } finally {
      await lossy.close();
      relay.close();
    }
  });

  it('a token whose answer the network lost is sent again under its Idempotency-Key: one token, shown once', async () => {
    const purpose = `lost answer ${Date.now()}`;
    const relay = await answerDroppingRelay(Number(new URL(t.baseUrl).port), (head) =>
      head.startsWith('POST /api/vc/v1/me/tokens '),
    );
    const lossy = await openConsoleAs(t, agent, { via: relay.url });
    try {
      await lossy.go('/account/tokens');
      await lossy.page.getByLabel('What it is for').fill(purpose);
      await lossy.page.getByRole('button', { name: 'Create token' }).click();
      const shown = (await lossy.page.locator('[data-token]').textContent())!;
      expect(relay.dropped()).toBe(true);
      expect(relay.matched()).toBe(2);
      const rows = await t.deps.knex('access_tokens').where({ user_id: owner.id, purpose });
      expect(rows).toHaveLength(1);
      // the string shown is the one token's: the API knows its owner by it
      const me = await fetch(`${t.apiUrl}/me`, { headers: { authorization: `Bearer ${shown}` } });
      expect((await me.json()).id).toBe(owner.id);
      expect(lossy.problems).toEqual(['console error: Failed to load resource: net::ERR_EMPTY_RESPONSE']);
    } finally {
      await lossy.close();
      relay.close();
    }
  });

  it('signs up and confirms through a network that loses the first answer of each: one e-mail, then the dashboard', async () => {
    const email = `lost-signup-${Date.now()}@example.test`;
    const relay = await answerDroppingRelay(Number(new URL(t.baseUrl).port), (head) =>
      head.startsWith('POST /api/vc/v1/signup/confirm ')
        ? 'confirm'
        : head.startsWith('POST /api/vc/v1/signup ')
          ? 'signup'
          : false,
    );
    const lossy = await openConsole(t, { via: relay.url });
    try {
      await lossy.page.goto(`${relay.url}/sign-up`);
      await lossy.page.getByLabel('Name').fill('Lou Lost');
      await lossy.page.getByLabel('E-mail address').fill(email);
      await lossy.page.getByLabel('Password').fill('a long lost password');
      await lossy.page.getByRole('button', { name: 'Sign up', exact: true }).click();
      const mail = await t.smtp!.waitFor((m) => m.to.includes(email));
      const code = /^Confirmation code: (\S+)$/m.exec(mail.text)![1];
      await lossy.page.getByLabel('Confirmation code').fill(code);
      await lossy.page.getByRole('button', { name: 'Confirm', exact: true }).click();
      await lossy.page.getByRole('heading', { name: 'Dashboard' }).waitFor();
      // the console sent each POST again (before, it sent them once: the page showed the network's error); on the old
      // API the second sign-up was 409 and the second confirm 422
      expect([relay.matchedOf('signup'), relay.matchedOf('confirm')]).toEqual([2, 2]);
      expect(t.smtp!.messages.filter((m) => m.to.includes(email))).toHaveLength(1);
      const users = await t.deps.knex('users').where({ email });
      expect(users).toHaveLength(1);
      expect(users[0].email_confirmed_at).not.toBeNull();
      // what the browser logs of the two answers lost, and nothing else
      expect(lossy.problems).toEqual(Array(2).fill('console error: Failed to load resource: net::ERR_EMPTY_RESPONSE'));
    } finally {
      await lossy.close();
      relay.close();
    }
  });

  it('project: the repository checked again; a registry refused beside its field, saved, removed; the backup window', async () => {
    const { page } = c;
    await go(`/projects/${project.id}`);
    await page.getByText(repo.dir).waitFor();
    await page.getByRole('button', { name: 'Reconnect' }).click();
    await expect
      .poll(async () => (await t.deps.knex('projects').where({ id: project.id }).first()).repository_checked_at, {
        timeout: 30_000,
      })
      .not.toBeNull();
    const checked = (await agent.get(`/projects/${project.id}/repository`)).body;
    expect(checked.reachable).toBe(true);
    await page.locator('dd', { hasText: /^yes$/ }).waitFor();

    await go(`/projects/${project.id}/registries`);
    await page.getByLabel('Registry host').fill('https://npm.example.test/path');
    await page.getByLabel('Username').fill('ci');
    await page.getByLabel('Password (write-only)').fill('registry secret');
    await page.getByRole('button', { name: 'Save registry' }).click();
    await expect.poll(() => page.getByLabel('Registry host').getAttribute('aria-invalid')).toBe('true');
    await page.getByText('must be a host name, with its port if any (no scheme or path)').first().waitFor();
    expect((await agent.get(`/projects/${project.id}/registries`)).body.data).toEqual([]);
    await page.getByLabel('Registry host').fill('npm.example.test');
    await page.getByRole('button', { name: 'Save registry' }).click();
    await page.getByText('npm.example.test').waitFor();
    expect((await agent.get(`/projects/${project.id}/registries`)).body.data).toMatchObject([
      { host: 'npm.example.test', username: 'ci' },
    ]);
    expect(await page.content()).not.toContain('registry secret');
    await checkNarrow(c, 'project-registries');
    await page.getByRole('button', { name: 'Remove' }).click();
    await page.getByText('npm.example.test').waitFor({ state: 'detached' });
    expect((await agent.get(`/projects/${project.id}/registries`)).body.data).toEqual([]);

    t.deps.config.backupLocalRoots = [path.join(t.dataDir, '..')];
    const dir = mkdtempSync(path.join(t.dataDir, '..', 'console-window-'));
    const dest = await agent.post(`/teams/${team.id}/backup-destinations`, {
      kind: 'local',
      name: 'nightly',
      path: dir,
    });
    expect(dest.status, dest.text).toBe(201);
    await go(`/projects/${project.id}/backup-window`);
    await page.getByText('The default window').waitFor();
    await page.getByLabel('Hour (UTC)').fill('25');
    await page.getByRole('button', { name: 'Save backup window' }).click();
    await page.getByText('must be an hour from 0 to 23').first().waitFor();
    await page.getByLabel('Hour (UTC)').fill('4');
    await page.getByLabel('Keep backups (days)').fill('14');
    await page.getByLabel('Destination').selectOption(dest.body.id);
    await page.getByRole('button', { name: 'Save backup window' }).click();
    await page.getByText('The default window').waitFor({ state: 'detached' });
    expect((await agent.get(`/projects/${project.id}/backup-window`)).body).toMatchObject({
      hour_utc: 4,
      retention_days: 14,
      destination_id: dest.body.id,
    });
    await c.screenshot('project-backup-window');
    expect(c.problems).toEqual([]);
  });
  it('project: delete refused while it has environments, then cancelled after its confirmation; an empty one deleted', async () => {
    const { page } = c;
    const old = await createProject(t, team, { name: 'old-shop' });
    await createEnvironment(t, old, { name: 'legacy' });
    await go(`/projects/${old.id}/settings`);
    await page.getByRole('button', { name: 'Delete project' }).click();
    await page.getByText('The project still has 1 environment; delete them first').waitFor();
    expect(await t.deps.knex('projects').where({ id: old.id }).first()).toBeTruthy();
    await page.getByRole('button', { name: 'Cancel the project…' }).click();
    const dialog = page.getByRole('alertdialog', { name: 'Cancel the project' });
    await dialog.getByText('Stops legacy').waitFor();
    await c.screenshot('project-cancel');
    // "Keep it" closes the question; asked again, it is confirmed.
    await dialog.getByRole('button', { name: 'Keep it' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Cancel the project…' }).click();
    expect((await t.deps.knex('projects').where({ id: old.id }).first()).cancelled_at).toBeNull();
    await dialog.getByRole('button', { name: 'Confirm cancellation' }).click();
    await dialog
      .getByRole('status')
      .getByText(/^Cancelled /)
      .waitFor();
    expect((await t.deps.knex('projects').where({ id: old.id }).first()).cancelled_at).not.toBeNull();
    expect((await t.deps.knex('environments').where({ project_id: old.id }).first()).stopped_at).not.toBeNull();

    const empty = await createProject(t, team, { name: 'empty-shop' });
    await go(`/projects/${empty.id}/settings`);
    await page.getByRole('button', { name: 'Delete project' }).click();
    await page.waitForURL(`${t.baseUrl}/`);
    expect(await t.deps.knex('projects').where({ id: empty.id }).first()).toBeUndefined();
    expect(c.problems).toEqual([]);
  });

  it('account: an expired token stays listed, with no "Revoke"', async () => {
    const { page } = c;
    await createAccessToken(t, owner, team, 7, 'last year CI');
    await t.deps
      .knex('access_tokens')
      .where({ user_id: owner.id, purpose: 'last year CI' })
      .update({ expires_at: new Date(Date.now() - 86_400_000) });
    await go('/account/tokens');
    const row = page.getByRole('listitem').filter({ hasText: 'last year CI' });
    await row.getByText('expired', { exact: true }).waitFor();
    expect(await row.getByRole('button', { name: 'Revoke' }).count()).toBe(0);
    expect(c.problems).toEqual([]);
  });
});
