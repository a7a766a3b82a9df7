import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import {
  type ConsoleBrowser,
  cancelPendingTask,
  checkNarrow,
  eachTestAnswersForProblems,
  openConsoleAs,
} from '../helpers/console-browser';
import { createEnvironment } from '../helpers/deploy-fixtures';
import {
  availableServiceRow,
  createProject,
  createTeam,
  createUser,
  PASSWORD,
  sessionAgent,
} from '../helpers/fixtures';
import type { Agent } from '../helpers/http';
import { makeStorageRoots } from '../helpers/storage-roots';

/**
 * The console's screens of storage and volumes, integrations, invitations, ticket replies, notification rules
 * and terms: each loads in chromium and does its main action through it, checked in PostgreSQL or the API.
 * No worker runs here: the tasks stay pending (and are cancelled through the API between changes).
 */
const t = useTestContext({ smtp: true });
let c: ConsoleBrowser;
let owner: Awaited<ReturnType<typeof createUser>>;
let agent: Agent;
let team: Awaited<ReturnType<typeof createTeam>>;
let project: Awaited<ReturnType<typeof createProject>>;
let environment: Awaited<ReturnType<typeof createEnvironment>>;
let roots: [string, string];

beforeAll(async () => {
  roots = makeStorageRoots(t);
  owner = await createUser(t, { name: 'Stella Storage' });
  team = await createTeam(t, owner, 'More screens team');
  project = await createProject(t, team, { name: 'more-shop' });
  environment = await createEnvironment(t, project, { name: 'production' });
  await t.deps.knex('servers').insert({
    team_id: team.id,
    project_id: project.id,
    environment_id: environment.id,
    role: 'web',
    name: 'production-web',
    plan: 'small',
    cpu: 0.5,
    memory_mb: 512,
    disk_gb: 10,
  });
  agent = await sessionAgent(t, owner);
  // The moves, discards and deletions ask to be confirmed.
  c = await openConsoleAs(t, agent, { acceptDialogs: true });
}, 180_000);

afterAll(async () => {
  await c?.close();
});

const go = (path: string) => c.go(path);

const pendingTask = (type: string) => cancelPendingTask(c, t, agent, type, environment.id);

const money = (n: number, currency: string) => new Intl.NumberFormat('en', { style: 'currency', currency }).format(n);

describe.sequential('more console screens', () => {
  eachTestAnswersForProblems(() => c);

  it('storage: the allowance with its price before "Set allowance", the split, a move, the volume grown', async () => {
    const { page } = c;
    const env = `/environments/${environment.id}`;
    await go(`${env}/storage`);
    await page.getByRole('heading', { name: 'Storage allowance' }).waitFor();
    const before = (await agent.get(`${env}/storage/allowance`)).body;
    expect(before).toMatchObject({ allowance_gb: 10, included_gb: 10, monthly_price: 0 });

    // A larger allowance: the price the API will charge shows before the confirming click.
    await page.getByLabel('New allowance (GB)').fill('17');
    const preview = page.getByRole('status', { name: 'Price preview' });
    await preview.waitFor();
    const shown = await preview.textContent();
    await c.screenshot('environment-storage-preview');
    await page.getByRole('button', { name: 'Set allowance' }).click();
    await page.getByText('Allowance saved.').waitFor();
    const after = (await agent.get(`${env}/storage/allowance`)).body;
    expect(after.allowance_gb).toBe(17);
    expect(after.monthly_price).toBeGreaterThan(0);
    expect(shown).toContain(`${money(after.monthly_price, after.currency)} a month`);
    expect(shown).toContain(`+${money(after.monthly_price, after.currency)} a month`);

    // The split: the volume never shrinks, and the refusal says so beside the files disk; then a split that
    // gives the volume more, with no change to the bill.
    const split = (await agent.get(`${env}/storage/split`)).body;
    expect(split.database_gb + split.files_gb).toBe(17);
    await page.getByLabel('Database disk (GB)').fill(String(split.database_gb + 1));
    await page.getByRole('button', { name: 'Split', exact: true }).click();
    await page.getByRole('list', { name: 'Refused: files_gb' }).waitFor();
    expect(await page.getByRole('list', { name: 'Refused: files_gb' }).textContent()).toMatch(/never shrinks/);
    expect((await agent.get(`${env}/storage/split`)).body).toEqual(split);
    await page.getByLabel('Database disk (GB)').fill(String(split.database_gb - 1));
    await expect.poll(() => preview.textContent()).toContain('no change to the bill');
    await page.getByRole('button', { name: 'Split', exact: true }).click();
    await page.getByText('Split saved.').waitFor();
    expect((await agent.get(`${env}/storage/split`)).body).toEqual({
      database_gb: split.database_gb - 1,
      files_gb: split.files_gb + 1,
    });
    await c.screenshot('environment-storage');
    await checkNarrow(c, 'environment-storage');

    // The files disk moves to the other root (a task).
    await page.getByLabel('Move the files disk to').selectOption(roots[1]);
    await page.getByRole('button', { name: 'Move', exact: true }).click();
    const move = await pendingTask('storage_move');
    expect(move.params).toMatchObject({ disk: 'files', to: roots[1] });

    // The volume grows: each size with what it adds to the bill, shown before "Grow".
    await go(`${env}/storage`);
    const files = (await agent.get(`${env}/storage/files/disk`)).body;
    const grow = (await agent.get(`/volumes/${files.volume_id}/grow`)).body;
    const choice = grow.choices[1];
    await page.getByLabel('Grow the volume to').selectOption(String(choice.size_gb));
    await expect
      .poll(() => preview.textContent())
      .toContain(`+${money(choice.monthly_price_delta, grow.currency)} a month`);
    await page.getByRole('button', { name: 'Grow', exact: true }).click();
    const grown = await pendingTask('volume_grow');
    expect(grown.params).toMatchObject({ volume_id: files.volume_id, size_gb: choice.size_gb });
    expect(c.problems).toEqual([]);
  });

  it("integrations: added with its kind's fields, changed, disconnected; invitations renewed and revoked", async () => {
    const { page } = c;
    await go(`/teams/${team.id}/integrations`);
    await page.getByLabel('Kind').selectOption('webhook');
    await page.getByLabel('Name', { exact: true }).fill('CI hook');
    await page.getByLabel('URL', { exact: true }).fill('https://hooks.example.test/vc');
    await page.getByLabel('Task failed', { exact: true }).check();
    await page.getByRole('button', { name: 'Add integration' }).click();
    await page.getByText(/whsec_/).waitFor();
    const [row] = await t.deps.knex('integrations').where({ team_id: team.id });
    expect(row).toMatchObject({ name: 'CI hook', kind: 'webhook', events: ['task.failed'] });
    await page.getByRole('button', { name: 'Change CI hook' }).click();
    const form = page.locator('form', { has: page.getByRole('button', { name: 'Disconnect' }) });
    await form.getByLabel('Name', { exact: true }).fill('Deploy hook');
    await form.getByLabel('Task succeeded', { exact: true }).check();
    await page.getByRole('heading', { name: 'Last deliveries' }).waitFor();
    await c.screenshot('team-integrations-edit');
    await form.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Deploy hook').waitFor();
    // Its events in words, as everywhere events are shown.
    await page.getByText(/Hears of: .*Task succeeded/).waitFor();
    const changed = await t.deps.knex('integrations').where({ id: row.id }).first();
    expect(changed.name).toBe('Deploy hook');
    expect([...changed.events].sort()).toEqual(['task.failed', 'task.succeeded']);
    // The URL left empty is kept.
    expect((await agent.get(`/integrations/${row.id}`)).body.url).toBe('https://hooks.example.test/vc');
    await checkNarrow(c, 'team-integrations');
    await page.getByRole('button', { name: 'Change Deploy hook' }).click();
    await page.getByRole('button', { name: 'Disconnect' }).click();
    // Gone from the list once the DELETE has answered and the list was read again (not before: no race).
    await expect.poll(() => page.getByText('Deploy hook').count(), { timeout: 10_000 }).toBe(0);
    expect(await t.deps.knex('integrations').where({ id: row.id })).toEqual([]);

    const email = 'invited.colleague@example.test';
    expect((await agent.post(`/teams/${team.id}/invitations`, { email, role: 'developer' })).status).toBe(201);
    await t.smtp!.waitFor((m) => m.to.includes(email));
    await go(`/teams/${team.id}/people`);
    await page.getByRole('button', { name: `Renew the invitation of ${email}` }).click();
    await page.getByText(`Renewed: e-mailed again to ${email}.`).waitFor();
    await expect.poll(() => t.smtp!.messages.filter((m) => m.to.includes(email)).length).toBe(2);
    await c.screenshot('team-people-invitations');
    await page.getByRole('button', { name: `Revoke the invitation of ${email}` }).click();
    await page.getByRole('button', { name: `Revoke the invitation of ${email}` }).waitFor({ state: 'detached' });
    expect((await agent.get(`/teams/${team.id}/people`)).body.invitations).toEqual([]);
    expect(c.problems).toEqual([]);
  });

  it('tickets: a reply that marks the ticket resolved', async () => {
    const { page } = c;
    const ticket = await agent.post(`/teams/${team.id}/tickets`, {
      subject: 'Slow builds',
      body: 'The build takes ten minutes.',
      category: 'other',
    });
    expect(ticket.status, ticket.text).toBe(201);
    await go(`/teams/${team.id}/tickets`);
    await page.getByRole('button', { name: 'Open', exact: true }).click();
    await page.getByText('The build takes ten minutes.').waitFor();
    await page.getByLabel('Your reply').fill('It is fast again, thank you.');
    await page.getByLabel('This solves it: mark resolved').check();
    await page.getByRole('button', { name: 'Reply', exact: true }).click();
    await page.getByRole('list', { name: 'Replies' }).getByText('It is fast again, thank you.').waitFor();
    const got = (await agent.get(`/tickets/${ticket.body.id}`)).body;
    expect(got.status).toBe('resolved');
    expect(got.replies).toEqual([expect.objectContaining({ body: 'It is fast again, thank you.', resolved: true })]);
    await t.smtp!.waitFor((m) => m.text.includes('It is fast again, thank you.'));
    await c.screenshot('team-ticket-reply');
    await checkNarrow(c, 'team-tickets');
    expect(c.problems).toEqual([]);
  });

  it('project settings: notification rules in one save; the terms accepted', async () => {
    const { page } = c;
    const hook = await agent.post(`/teams/${team.id}/integrations`, {
      kind: 'slack',
      name: 'Team chat',
      events: ['task.failed'],
      webhook_url: 'https://hooks.slack.example.test/services/T0/B0/X',
    });
    expect(hook.status, hook.text).toBe(201);
    await go(`/projects/${project.id}/settings`);
    await page.getByLabel('Whom to e-mail (task failed)').selectOption('none');
    await page.getByRole('group', { name: 'Task failed', exact: true }).getByLabel('Team chat (slack)').check();
    await page.getByRole('button', { name: 'Save rules' }).click();
    await page.getByText('Rules saved.').waitFor();
    const rules = (await agent.get(`/projects/${project.id}/notifications`)).body.rules;
    expect(rules.find((r: { event: string }) => r.event === 'task.failed')).toEqual({
      event: 'task.failed',
      email: 'none',
      integration_ids: [hook.body.id],
    });

    const terms = (await agent.get(`/projects/${project.id}/terms`)).body;
    await page.getByRole('button', { name: 'Accept the terms' }).click();
    await page.locator('[data-accepted]').waitFor();
    expect(await page.locator('[data-accepted]').textContent()).toContain('Stella Storage');
    expect((await agent.get(`/projects/${project.id}/terms`)).body.accepted).toMatchObject({
      version: terms.version,
      by: { id: owner.id },
    });
    expect(await page.getByRole('button', { name: 'Accept the terms' }).count()).toBe(0);
    await c.screenshot('project-settings-rules');
    await checkNarrow(c, 'project-settings');
    expect(c.problems).toEqual([]);
  });

  it('backups: the key revealed after the password; reset-database takes the typed name; other sessions ended', async () => {
    const { page } = c;
    // A sign-in older than the limit: the API answers reauthentication_required, and the console asks.
    const age = () =>
      t.deps
        .knex('sessions')
        .where({ user_id: owner.id })
        .update({ authenticated_at: new Date(Date.now() - 3 * 3600_000) });
    await age();
    await go(`/environments/${environment.id}/backups`);
    await page.getByRole('button', { name: 'Reveal the key (logged)' }).click();
    const pw = page.getByLabel('Your password');
    await pw.waitFor();
    expect(await page.locator('[data-backup-key]').count()).toBe(0);
    await pw.fill(PASSWORD);
    await page.getByRole('button', { name: 'Reveal the key (logged)' }).click();
    const key = page.locator('[data-backup-key]');
    await key.waitFor();
    expect((await key.textContent())!.length).toBeGreaterThan(20);
    const activity = (await agent.get(`/teams/${team.id}/activity`)).body.data as { summary: string }[];
    expect(activity.map((a) => a.summary)).toContain(
      'Backup key of production revealed to Stella Storage from 127.0.0.1',
    );

    // Reset: offered only with a database to reset (the API refuses it without one, and the console says so
    // instead of a button); then the button waits for the environment's name.
    const refusal = (await agent.post(`/environments/${environment.id}/reset-database`, { confirm: 'production' })).body
      .error;
    expect(refusal.code).toBe('no_database_service');
    await page.getByText('There is no database to reset').waitFor();
    expect(await page.getByRole('button', { name: 'Reset database' }).count()).toBe(0);
    await c.screenshot('environment-backups-key');
    const [service] = await t.deps
      .knex('services')
      .insert(availableServiceRow(environment, 'svc_reset_screen'))
      .returning('id');
    await go(`/environments/${environment.id}/backups`);
    const reset = page.getByRole('button', { name: 'Reset database' });
    await reset.waitFor();
    expect(await reset.isDisabled()).toBe(true);
    await page.getByLabel('Type "production" to confirm').fill('production');
    expect(await reset.isDisabled()).toBe(false);
    expect(await page.getByText('There is no database to reset').count()).toBe(0);
    await c.screenshot('environment-backups-reset');
    // not pressed: the file's later tests use this environment, and a reset would hold it
    await t.deps.knex('services').where({ id: service.id }).delete();
    await checkNarrow(c, 'environment-backups');

    // Ending the other browser sessions asks for the password too.
    const other = await sessionAgent(t, owner);
    expect((await other.get('/me')).status).toBe(200);
    await age();
    await go('/account');
    await page.getByRole('button', { name: 'End other sessions' }).click();
    await pw.waitFor();
    await pw.fill(PASSWORD);
    await page.getByRole('button', { name: 'End other sessions' }).click();
    await page.getByText(/^Ended [1-9]\d* other sessions?\.$/).waitFor();
    expect((await other.get('/me')).status).toBe(401);
    expect((await agent.get('/me')).status).toBe(200);
    expect(c.problems).toEqual([]);
  });

  it("an invitation's e-mail link opens a page where the invited account accepts it and lands on the team", async () => {
    const { page } = c;
    const other = await createUser(t, { name: 'Inviting Ivy' });
    const otherTeam = await createTeam(t, other, 'Inviting team');
    const ivy = await sessionAgent(t, other);
    const invited = await ivy.post(`/teams/${otherTeam.id}/invitations`, { email: owner.email, role: 'viewer' });
    expect(invited.status, invited.text).toBe(201);
    const mail = await t.smtp!.waitFor((m) => m.to.includes(owner.email) && m.subject.includes('Inviting team'));
    const link = new RegExp(`${t.baseUrl}(/invitations/[0-9a-f-]{36})`).exec(mail.text)?.[1];
    expect(link).toBe(`/invitations/${invited.body.id}`);
    await go(link!);
    await c.screenshot('invitation');
    await page.getByRole('button', { name: 'Accept', exact: true }).click();
    await page.waitForURL(`${t.baseUrl}/teams/${otherTeam.id}`);
    await page.getByRole('heading', { name: 'Inviting team' }).waitFor();
    const joined = await t.deps.knex('memberships').where({ team_id: otherTeam.id, user_id: owner.id }).first();
    expect(joined.role).toBe('viewer');
    // Accepted once: the link now answers the API's refusal.
    await go(link!);
    await page.getByRole('button', { name: 'Accept', exact: true }).click();
    await page.getByRole('alert').waitFor();
    expect(c.problems).toEqual([]);
  });

  it("variables: removing an environment's own value lets the project's apply again", async () => {
    const { page } = c;
    const env = `/environments/${environment.id}`;
    expect(
      (await agent.post(`/projects/${project.id}/variables`, { name: 'SHARED', value: 'from-project' })).status,
    ).toBe(201);
    expect((await agent.post(`${env}/variables`, { name: 'SHARED', value: 'own' })).status).toBe(201);
    expect((await agent.post(`${env}/variables`, { name: 'GONE_SOON', value: 'x' })).status).toBe(201);
    await go(`${env}/variables`);
    const table = page.getByRole('table', { name: 'Variables' });
    await page.getByRole('button', { name: 'Show the value of SHARED' }).click();
    await table.getByText('own', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Remove SHARED' }).click();
    await page.getByRole('button', { name: 'Show the value of SHARED' }).click();
    await table.getByText('from-project', { exact: true }).waitFor();
    // The project's value is the project's to remove: no button for it here.
    expect(await page.getByRole('button', { name: 'Remove SHARED' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Remove GONE_SOON' }).click();
    await table.getByText('GONE_SOON').waitFor({ state: 'detached' });
    const left = (await agent.get(`${env}/variables`)).body.data;
    expect(left).toEqual([expect.objectContaining({ name: 'SHARED', source: 'project' })]);
    expect(c.problems).toEqual([]);
  });

  it('machines: the build machine, its plan priced before "Choose build machine"', async () => {
    const { page } = c;
    const env = `/environments/${environment.id}`;
    const before = (await agent.get(`${env}/build-machines`)).body;
    const provider = before.providers.find((p: { plans: unknown[] }) => p.plans.length > 1) ?? before.providers[0];
    const plan = provider.plans.find((p: { id: string }) => p.id !== before.plan || provider.id !== before.provider);
    expect(plan).toBeTruthy();
    await go(`${env}/machines`);
    await page.getByLabel('Build provider').selectOption(provider.id);
    await page.getByLabel('Build plan').selectOption(plan.id);
    const preview = page.getByRole('status', { name: 'Price preview' });
    await expect
      .poll(() => preview.textContent())
      .toContain(
        plan.monthly_price_delta === 0
          ? 'no change to the bill'
          : `${money(plan.monthly_price, before.currency)} a month`,
      );
    await c.screenshot('environment-machines-build');
    await checkNarrow(c, 'environment-machines');
    await page.getByRole('button', { name: 'Choose build machine' }).click();
    await page.getByText('Build machine chosen').waitFor();
    expect((await agent.get(`${env}/build-machines`)).body).toMatchObject({ provider: provider.id, plan: plan.id });
    expect(c.problems).toEqual([]);
  });

  it('backup destinations: a refused path shown beside its field, then a destination renamed', async () => {
    const { page } = c;
    t.deps.config.backupLocalRoots = [path.join(t.dataDir, '..')];
    const dir = mkdtempSync(path.join(t.dataDir, '..', 'console-dest-'));
    const made = await agent.post(`/teams/${team.id}/backup-destinations`, { kind: 'local', name: 'disk', path: dir });
    expect(made.status, made.text).toBe(201);
    await go(`/teams/${team.id}/backup-destinations`);
    await page.getByRole('button', { name: 'Change disk' }).click();
    const form = page.locator('form', { has: page.getByRole('button', { name: 'Save destination' }) });
    await form.getByLabel('Path').fill('/not/a/root/of/this/host');
    await form.getByRole('button', { name: 'Save destination' }).click();
    await expect.poll(() => form.getByLabel('Path').getAttribute('aria-invalid')).toBe('true');
    expect((await agent.get(`/backup-destinations/${made.body.id}`)).body.settings).toEqual(made.body.settings);
    await form.getByLabel('Path').fill(dir);
    await form.getByLabel('Name').fill('offsite disk');
    await c.screenshot('team-backup-destinations-edit');
    await form.getByRole('button', { name: 'Save destination' }).click();
    await page.getByText('offsite disk').waitFor();
    expect((await agent.get(`/backup-destinations/${made.body.id}`)).body.name).toBe('offsite disk');
    expect(c.problems).toEqual([]);
  });
});
