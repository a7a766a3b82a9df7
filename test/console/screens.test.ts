import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertSamples } from '../../db/queries/resources';
import { useTestContext } from '../helpers/context';
import { type ConsoleBrowser, eachTestAnswersForProblems, openConsoleAs, signIn } from '../helpers/console-browser';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { addMember, createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import type { Agent } from '../helpers/http';
import { startTxtServer, type TxtServer } from '../helpers/dns';

/**
 * One test per screen family of the console (dashboard, team, project, environment, task, account): each
 * loads its screen in chromium and does its main action through it, checked in PostgreSQL or the API.
 * No worker runs here: tasks stay pending, so the task page can cancel them.
 */
// A real DNS server on loopback, started before the system so DNS_SERVERS can point at it.
const env: Record<string, string> = {};
let dns: TxtServer;
beforeAll(async () => {
  dns = await startTxtServer();
  env.DNS_SERVERS = dns.server;
});
afterAll(() => dns?.close());

const t = useTestContext({ smtp: true, env });
let c: ConsoleBrowser;
let owner: Awaited<ReturnType<typeof createUser>>;
let agent: Agent;
let team: Awaited<ReturnType<typeof createTeam>>;
let project: Awaited<ReturnType<typeof createProject>>;
let environment: Awaited<ReturnType<typeof createEnvironment>>;
let developer: Awaited<ReturnType<typeof createUser>>;

beforeAll(async () => {
  owner = await createUser(t, { name: 'Olive Owner' });
  team = await createTeam(t, owner, 'Screens team');
  project = await createProject(t, team, { name: 'screens-shop' });
  environment = await createEnvironment(t, project, { name: 'staging' });
  await t.deps.knex('servers').insert({
    team_id: team.id,
    project_id: project.id,
    environment_id: environment.id,
    role: 'web',
    name: 'staging-web',
    plan: 'small',
    cpu: 0.5,
    memory_mb: 512,
    disk_gb: 10,
  });
  developer = await createUser(t, { name: 'Dev Eloper' });
  await addMember(t, team, developer, 'developer');
  agent = await sessionAgent(t, owner);
  c = await openConsoleAs(t, agent);
}, 180_000);

afterAll(async () => {
  await c?.close();
});

const go = (path: string) => c.go(path);

describe.sequential('the console screens', () => {
  eachTestAnswersForProblems(() => c);

  it('dashboard: teams, projects, latest tasks and the bell; creates a team', async () => {
    const { page } = c;
    await t.deps.knex('tasks').insert({
      team_id: team.id,
      project_id: project.id,
      environment_id: environment.id,
      kind: 'deployments',
      type: 'deploy',
      status: 'running',
      account_user_id: owner.id,
      account_via: 'session',
      workflow_id: `screens-running-${Date.now()}`,
    });
    await go('/');
    await page.getByRole('link', { name: 'Screens team' }).waitFor();
    await page.getByRole('link', { name: 'screens-shop' }).waitFor();
    await page.getByRole('heading', { name: 'Latest tasks' }).waitFor();
    // Each task by the registry's label (db/vocabulary.ts), not its type.
    await page
      .getByRole('region', { name: 'Latest tasks' })
      .getByRole('link', { name: 'Deploy', exact: true })
      .first()
      .waitFor();
    // The bell: one task waiting (running), from GET /teams/{id}/notifications.
    const bell = page.getByRole('button', { name: /Notifications/ });
    await expect.poll(() => bell.textContent(), { timeout: 30_000 }).toMatch(/Waiting tasks: 1/);
    // The team's next steps, from its real state; hidden on request.
    const steps = page.getByRole('list', { name: 'Next steps' });
    await steps.getByText('Connect a repository').waitFor();
    await steps.getByText('Invite a teammate').waitFor();
    await c.screenshot('dashboard');
    await page.getByRole('button', { name: 'Hide these steps' }).click();
    await steps.waitFor({ state: 'detached' });
    expect((await agent.get(`/teams/${team.id}/settings`)).body.next_steps).toBeNull();
    await page.getByLabel("New team's name").fill('Second team');
    await page.getByRole('button', { name: 'Create team' }).click();
    await page.waitForURL(/\/teams\/[0-9a-f-]{36}$/);
    const created = await t.deps.knex('teams').where({ name: 'Second team' }).first();
    expect(page.url()).toBe(`${t.baseUrl}/teams/${created.id}`);
    expect(c.problems).toEqual([]);
  });

  it("projects: created on a team's Projects tab or on the dashboard in the team chosen; a developer is told who creates them", async () => {
    const { page } = c;
    const second = await t.deps.knex('teams').where({ name: 'Second team' }).first();
    await go(`/teams/${second.id}`);
    await page.getByText('No projects yet.').waitFor();
    // before, the tab said "create one on the dashboard"; a name the API refuses is marked on the field
    await page.getByLabel("New project's name").fill('Second API');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.getByLabel("New project's name").and(page.locator('[aria-invalid="true"]')).waitFor();
    expect(await t.deps.knex('projects').where({ team_id: second.id })).toEqual([]);
    await page.getByLabel("New project's name").fill('second-api');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.waitForURL(/\/projects\/[0-9a-f-]{36}$/);
    const fromTab = await t.deps.knex('projects').where({ name: 'second-api' }).first();
    expect([page.url(), fromTab.team_id]).toEqual([`${t.baseUrl}/projects/${fromTab.id}`, second.id]);
    await go('/');
    await page.getByLabel('Team', { exact: true }).selectOption({ label: 'Second team' });
    await page.getByLabel("New project's name").fill('second-web');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.waitForURL(/\/projects\/[0-9a-f-]{36}$/);
    expect((await t.deps.knex('projects').where({ name: 'second-web' }).first()).team_id).toBe(second.id);

    // a developer of one team: no form that the API would refuse, and who creates projects instead
    const dev = await openConsoleAs(t, await sessionAgent(t, developer));
    try {
      await dev.go('/');
      await dev.page.getByText('An admin or owner of your team creates its projects.').waitFor();
      await dev.go(`/teams/${team.id}`);
      await dev.page.getByRole('link', { name: 'screens-shop' }).waitFor();
      expect(await dev.page.getByRole('button', { name: 'Create project' }).count()).toBe(0);
      expect(dev.problems).toEqual([]);
    } finally {
      await dev.close();
    }
    expect(c.problems).toEqual([]);
  });

  it('team: invites a colleague, changes a role, keeps the last owner; billing laid out by country', async () => {
    const { page } = c;
    await go(`/teams/${team.id}/people`);
    await page.getByText('Dev Eloper').waitFor();
    await page.getByLabel('E-mail address').fill('new.colleague@example.test');
    await page.getByLabel('Role', { exact: true }).selectOption('viewer');
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByText('new.colleague@example.test').waitFor();
    const mail = await t.smtp!.waitFor((m) => m.to.includes('new.colleague@example.test'));
    expect(mail.text).toContain('Screens team');
    await page.getByLabel('Role of Dev Eloper').selectOption('admin');
    await expect
      .poll(async () => (await t.deps.knex('memberships').where({ user_id: developer.id }).first()).role, {
        timeout: 30_000,
      })
      .toBe('admin');
    // The last owner stays: demoting yourself is refused with the API's message.
    await page.getByLabel('Role of Olive Owner').selectOption('viewer');
    await page.getByText('A team keeps at least one owner').waitFor();
    expect((await t.deps.knex('memberships').where({ user_id: owner.id, team_id: team.id }).first()).role).toBe(
      'owner',
    );
    await c.screenshot('team-people');

    await go(`/teams/${team.id}/billing`);
    await page.getByLabel('Country (two-letter code)').fill('US');
    const format = (await agent.post('/billing/address-format', { country: 'US' })).body;
    const own = format.fields.filter((f: { name: string }) => !['name', 'country'].includes(f.name));
    expect(own.length).toBeGreaterThan(2);
    for (const f of own) await page.getByLabel(f.label, { exact: true }).waitFor();
    await c.screenshot('team-billing');
    expect(c.problems).toEqual([]);
  });

  it('team: a repository host shows its SSH key; a ticket carries a screenshot; activity filters', async () => {
    const { page } = c;
    await go(`/teams/${team.id}/repository-hosts`);
    await page.getByLabel('Kind').selectOption('ssh');
    await page.getByLabel('Host', { exact: true }).fill('git.example.test');
    await page.getByRole('button', { name: 'Add host' }).click();
    await expect
      .poll(async () => t.deps.knex('repository_hosts').where({ team_id: team.id }).first(), { timeout: 30_000 })
      .toBeTruthy();
    const listed = (await agent.get(`/teams/${team.id}/repository-hosts`)).body.data[0];
    expect(listed.public_key).toMatch(/^ssh-/);
    await page.getByText(listed.public_key).waitFor();
    await page.getByRole('button', { name: 'Copy key' }).waitFor();
    await c.screenshot('team-repository-hosts');

    await go(`/teams/${team.id}/tickets`);
    const png = path.join(mkdtempSync(path.join(tmpdir(), 'console-shot-')), 'screenshot.png');
    writeFileSync(
      png,
      Buffer.from(
        'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
        'base64',
      ),
    );
    await page.getByLabel('Subject').fill('The deploy hangs');
    await page.getByLabel('What happened').fill('It waits at the build step.');
    await page.getByLabel('Screenshots').setInputFiles(png);
    await page.getByRole('button', { name: 'Open ticket' }).click();
    await page.getByText('The deploy hangs').waitFor();
    await page.getByText('screenshot.png').waitFor();
    const mail = await t.smtp!.waitFor((m) => m.subject.includes('The deploy hangs'));
    expect(mail.attachments.map((a) => a.filename)).toContain('screenshot.png');

    await go(`/teams/${team.id}/activity`);
    await page.getByRole('list', { name: 'Activity' }).waitFor();
    await page.getByLabel('Kind').selectOption('backups');
    await page.getByText('Nothing matches.').waitFor();
    expect(c.problems).toEqual([]);
  });

  it('project: edge rules in one save show every refused field, then save', async () => {
    const { page } = c;
    await go(`/projects/${project.id}/edge`);
    await page.getByLabel('Blocked addresses (one address or CIDR a line)').fill('203.0.113.7\nnot-an-address');
    await page.getByLabel('Requests').fill('0');
    await page.getByLabel('Per seconds').fill('60');
    await page.getByRole('button', { name: 'Save edge rules' }).click();
    const refused = (
      await agent.patch(`/projects/${project.id}/edge`, {
        blocked_addresses: ['203.0.113.7', 'not-an-address'],
        rate_limit: { requests: 0, per_seconds: 60 },
      })
    ).body.error.fields as Record<string, string>;
    expect(Object.keys(refused).length).toBeGreaterThanOrEqual(2);
    // Every refused field of the one save shows its reason, beside the input it names.
    for (const reason of Object.values(refused)) await page.getByText(reason).first().waitFor();
    // Each under its field, placed in words ("Line 2: ..."), not by the API's field path.
    await page.getByText(`Line 2: ${refused['blocked_addresses.1']}`).waitFor();
    expect(await page.getByText('blocked_addresses').count()).toBe(0);
    expect(await page.getByLabel('Requests').getAttribute('aria-invalid')).toBe('true');
    await c.screenshot('project-edge-refused');
    expect((await agent.get(`/projects/${project.id}/edge`)).body.blocked_addresses).toEqual([]);
    await page.getByLabel('Blocked addresses (one address or CIDR a line)').fill('203.0.113.7');
    await page.getByLabel('Requests').fill('100');
    await page.getByRole('button', { name: 'Save edge rules' }).click();
    await page.getByText('Saved.').waitFor();
    const edge = (await agent.get(`/projects/${project.id}/edge`)).body;
    expect(edge.blocked_addresses).toEqual(['203.0.113.7/32']);
    expect(edge.rate_limit).toEqual({ requests: 100, per_seconds: 60 });
    expect(c.problems).toEqual([]);
  });

  it('environment: charts for each window, the scale price preview before "Scale"; a 409 names the running task', async () => {
    const { page } = c;
    const now = Date.now();
    await insertSamples(
      t.deps.knex,
      Array.from({ length: 30 }, (_, i) => ({
        environment_id: environment.id,
        at: new Date(now - (30 - i) * 60_000),
        cpu: 0.1 + i / 100,
        memory_bytes: (100 + i) * 1024 * 1024,
        disk_bytes: 200 * 1024 * 1024,
      })),
    );
    await go(`/environments/${environment.id}/resources`);
    for (const w of ['1h', '24h', '7d', '30d', '90d']) {
      await page.getByRole('button', { name: w, exact: true }).click();
      await expect
        .poll(() => page.getByRole('button', { name: w, exact: true }).getAttribute('aria-pressed'), {
          timeout: 30_000,
        })
        .toBe('true');
      await page.locator('[data-chart="cpu"] canvas').waitFor();
    }
    await page.getByRole('button', { name: '1h', exact: true }).click();
    await page.locator('[data-chart="memory"] canvas').waitFor();
    await c.screenshot('environment-resources');

    await go(`/environments/${environment.id}/machines`);
    const scale = (await agent.get(`/environments/${environment.id}/scale`)).body;
    const two = scale.choices.find((ch: { instances: number }) => ch.instances === 2);
    await page.getByLabel('Instances').selectOption('2');
    const preview = page.getByRole('status', { name: 'Price preview' });
    const money = (n: number) => new Intl.NumberFormat('en', { style: 'currency', currency: scale.currency }).format(n);
    await expect
      .poll(() => preview.textContent(), { timeout: 30_000 })
      .toContain(`+${money(two.monthly_price_delta)} a month`);
    await c.screenshot('environment-machines');
    await page.getByRole('button', { name: 'Scale', exact: true }).click();
    await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/);
    const scaleTask = await t.deps.knex('tasks').where({ environment_id: environment.id, type: 'scale' }).first();
    expect(scaleTask.params).toMatchObject({ instances: 2 });

    // With that task waiting, another change is refused (409): the refusal links to the task in the way.
    await go(`/environments/${environment.id}/machines`);
    await page.getByLabel('Instances').selectOption('3');
    await page.getByRole('button', { name: 'Scale', exact: true }).click();
    const link = page.getByRole('alert').getByRole('link', { name: scaleTask.id });
    await link.waitFor();
    expect(await link.getAttribute('href')).toBe(`/tasks/${scaleTask.id}`);
    await expect.poll(() => link.textContent()).toBe(`Scale (pending, asked by Olive Owner), ${scaleTask.id}`);
    await page.getByText('Another change runs on this environment').waitFor();
    expect(await t.deps.knex('tasks').where({ environment_id: environment.id, type: 'scale' })).toHaveLength(1);
    expect(c.problems).toEqual([]);
  });

  it('environment: edge settings in one save; the keyboard reaches the maintenance switch; maintenance with a note', async () => {
    const { page } = c;
    await go(`/environments/${environment.id}/edge`);
    await page.getByLabel(/Allowed addresses/).fill('198.51.100.0/24');
    await page.getByLabel('Username').fill('preview');
    await page.getByLabel('New password (write-only)').fill('let me in please');
    await page.getByLabel('Sticky sessions').check();
    await page.getByRole('button', { name: 'Save edge settings' }).click();
    await page.getByText('Saved.').waitFor();
    const edge = (await agent.get(`/environments/${environment.id}/edge`)).body;
    expect(edge).toEqual({
      allowed_addresses: ['198.51.100.0/24'],
      password: { enabled: true, username: 'preview' },
      stickiness: true,
    });
    expect(await page.content()).not.toContain('let me in please');

    await go(`/environments/${environment.id}`);
    // No repository: no Deploy button, the reason instead (GET /environments/{id}/deploy decides).
    await page.getByText('Connect a repository to the project to deploy.').waitFor();
    expect(await page.getByRole('button', { name: 'Deploy', exact: true }).count()).toBe(0);
    await page.getByRole('button', { name: 'Turn maintenance on' }).waitFor();
    let focused = '';
    for (let i = 0; i < 60 && focused !== 'Turn maintenance on'; i++) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? '');
    }
    expect(focused).toBe('Turn maintenance on');
    const outline = await page.evaluate(() => {
      const style = getComputedStyle(document.activeElement as Element);
      return { style: style.outlineStyle, width: Number.parseFloat(style.outlineWidth) };
    });
    expect(outline.style).not.toBe('none');
    expect(outline.width).toBeGreaterThanOrEqual(2);

    // The maintenance switch, with its note for visitors.
    await page.getByLabel('Note for visitors').fill('Back at noon');
    await page.getByRole('button', { name: 'Turn maintenance on' }).click();
    await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/);
    const maintenance = await t.deps
      .knex('tasks')
      .where({ environment_id: environment.id, kind: 'maintenance' })
      .first();
    expect(page.url()).toBe(`${t.baseUrl}/tasks/${maintenance.id}`);
    expect(maintenance).toMatchObject({ type: 'maintenance_on', params: { note: 'Back at noon' } });
    expect(c.problems).toEqual([]);
  });

  it('environment: a domain is verified once its TXT record exists', async () => {
    const { page } = c;
    await go(`/environments/${environment.id}/domains`);
    await page.getByLabel('Hostname').fill('screens.example.test');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.getByRole('heading', { name: 'screens.example.test' }).waitFor();
    const domain = (await agent.get(`/environments/${environment.id}/domains`)).body.data[0];
    await page.getByRole('button', { name: 'Verify' }).click();
    await expect
      .poll(async () => (await t.deps.knex('domains').where({ id: domain.id }).first()).last_checked_at, {
        timeout: 30_000,
      })
      .not.toBeNull();
    expect((await t.deps.knex('domains').where({ id: domain.id }).first()).status).toBe('pending');
    const left = (await agent.get(`/environments/${environment.id}/domains`)).body.data[0].verification.checks_left;
    expect(left).toBeLessThan(domain.verification.checks_left);
    const checksLeft = page.locator('dt:text-is("Checks left this hour") + dd');
    await expect.poll(() => checksLeft.textContent()).toBe(String(left));
    dns.set(domain.verification.name, [domain.verification.value]);
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.locator('.status.verified').waitFor();
    expect((await t.deps.knex('domains').where({ id: domain.id }).first()).status).toBe('verified');
    expect(await page.getByRole('button', { name: 'Verify' }).count()).toBe(0);
    // its certificate's state, and why there is none: this console has no ACME directory (docs/https.md)
    const certificate = page.locator('dt:text-is("Certificate") + dd');
    expect(await certificate.locator('.status').textContent()).toBe('none');
    expect(await certificate.textContent()).toContain(
      'HTTPS is not configured on this console (ACME_DIRECTORY_URL is not set)',
    );
    await c.screenshot('environment-domain-verified');
    expect(c.problems).toEqual([]);
  });

  it('task: status, who asked and how, the log; "Cancel" while pending', async () => {
    const { page } = c;
    const task = await t.deps.knex('tasks').where({ environment_id: environment.id, type: 'scale' }).first();
    await go(`/tasks/${task.id}`);
    await page.getByText('Olive Owner in the console').waitFor();
    expect(await page.locator('[data-status]').textContent()).toBe('pending');
    await page.getByRole('log', { name: 'Task log' }).waitFor();
    await c.screenshot('task-pending');
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    await expect.poll(() => page.locator('[data-status]').textContent(), { timeout: 30_000 }).toBe('cancelled');
    expect((await t.deps.knex('tasks').where({ id: task.id }).first()).status).toBe('cancelled');
    expect(await page.getByRole('button', { name: 'Cancel', exact: true }).count()).toBe(0);
    expect(c.problems).toEqual([]);
  });

  it('task: a deploy-like task draws its phases as a timeline, in order', async () => {
    const { page } = c;
    const at = (ms: number) => new Date(Date.parse('2026-01-02T03:04:05.000Z') + ms).toISOString();
    const [task] = await t.deps.knex('tasks').insert(
      {
        team_id: team.id,
        project_id: project.id,
        environment_id: environment.id,
        kind: 'deployments',
        type: 'redeploy',
        status: 'succeeded',
        account_user_id: owner.id,
        account_via: 'session',
        workflow_id: `screens-phases-${Date.now()}`,
        created_at: at(0),
        started_at: at(40),
        finished_at: at(460),
        phases: JSON.stringify({
          release_ready: at(60),
          process_started: at(80),
          healthy: at(380),
          edge_switched: at(450),
          old_stopped: at(1500),
        }),
      },
      ['id'],
    );
    await go(`/tasks/${task.id}`);
    const timeline = page.getByRole('list', { name: 'Phases' });
    await timeline.waitFor();
    const names = await timeline.locator('li').evaluateAll((lis) => lis.map((li) => li.getAttribute('data-phase')));
    expect(names).toEqual([
      'queued',
      'started',
      'release_ready',
      'process_started',
      'healthy',
      'edge_switched',
      'old_stopped',
    ]);
    const healthy = timeline.locator('li[data-phase="healthy"]');
    expect(await healthy.textContent()).toBe('Healthy+0.38 s(0.30 s)');
    await c.screenshot('task-phases');
    expect(c.problems).toEqual([]);
  });

  it('account: adds an SSH key; a revoked token stays listed', async () => {
    const { page } = c;
    const dir = mkdtempSync(path.join(tmpdir(), 'console-key-'));
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'laptop', '-f', path.join(dir, 'id')]);
    const publicKey = readFileSync(path.join(dir, 'id.pub'), 'utf8').trim();
    await go('/account/ssh-keys');
    await page.getByLabel('Name').fill('laptop');
    await page.getByLabel('Public key').fill(publicKey);
    await page.getByRole('button', { name: 'Add key' }).click();
    await expect
      .poll(async () => t.deps.knex('ssh_keys').where({ user_id: owner.id }).first(), { timeout: 30_000 })
      .toBeTruthy();
    const key = await t.deps.knex('ssh_keys').where({ user_id: owner.id }).first();
    await page.getByText(key.fingerprint).waitFor();
    await c.screenshot('account-ssh-keys');

    await go('/account/tokens');
    await page.getByLabel('What it is for').fill('old laptop');
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.locator('[data-token]').waitFor();
    await page.getByRole('button', { name: 'Revoke' }).click();
    await page.getByText('revoked', { exact: true }).waitFor();
    await page.reload();
    await page.getByText('old laptop').waitFor();
    await page.getByText('revoked', { exact: true }).waitFor();
    const token = await t.deps.knex('access_tokens').where({ user_id: owner.id, purpose: 'old laptop' }).first();
    expect(token.revoked_at).not.toBeNull();
    await c.screenshot('account-tokens');
    expect(c.problems).toEqual([]);
  });

  it('signing out: any page then asks for e-mail and password, and shows itself after signing in', async () => {
    const { page } = c;
    await go('/account');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/sign-in$/);
    expect((await agent.get('/me')).status).toBe(401);
    await page.goto(`${t.baseUrl}/teams/${team.id}/people`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await c.screenshot('sign-in');
    await signIn(page, owner.email);
    await page.getByText('Dev Eloper').waitFor();
    expect(page.url()).toBe(`${t.baseUrl}/teams/${team.id}/people`);
    expect(c.problems).toEqual([]);
  });
});
