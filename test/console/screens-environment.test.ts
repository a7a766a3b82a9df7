import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvironmentMachines } from '../../api/machines/service';
import { useTestContext } from '../helpers/context';
import {
  type ConsoleBrowser,
  cancelPendingTask,
  checkNarrow,
  eachTestAnswersForProblems,
  openConsoleAs,
} from '../helpers/console-browser';
import { createEnvironment, createSharedAppRepo } from '../helpers/deploy-fixtures';
import { availableServiceRow, createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import type { Agent } from '../helpers/http';
import { type Receiver, startReceiver } from '../helpers/receiver';

/**
 * The environment screens that the other screen tests leave out: "Build", resize, reshape and a new service,
 * each priced before its click, sync after its confirmation, the CDN's clear, log forwarding with its test
 * send to a real collector on loopback, and "Where the logs go". Each is done in chromium and checked in
 * PostgreSQL, the API or the collector. No worker runs: tasks stay pending, and are cancelled through the
 * API between changes.
 */
const t = useTestContext({ env: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' } });
let c: ConsoleBrowser;
let agent: Agent;
let team: Awaited<ReturnType<typeof createTeam>>;
let project: Awaited<ReturnType<typeof createProject>>;
let production: Awaited<ReturnType<typeof createEnvironment>>;
let staging: Awaited<ReturnType<typeof createEnvironment>>;
let receiver: Receiver;

beforeAll(async () => {
  const repo = createSharedAppRepo();
  repo.commit('v1');
  receiver = await startReceiver(0, '/ingest');
  const owner = await createUser(t, { name: 'Eve Environment' });
  team = await createTeam(t, owner, 'Environment team');
  project = await createProject(t, team, { name: 'env-shop', repository_url: repo.dir });
  production = await createEnvironment(t, project, { name: 'production' });
  staging = await createEnvironment(t, project, { name: 'staging' });
  // A web server and a build machine, as the environment's creation makes them.
  await t.deps.knex.transaction(async (trx) => {
    await createEnvironmentMachines(trx, t.deps, production);
    await createEnvironmentMachines(trx, t.deps, staging);
  });
  agent = await sessionAgent(t, owner);
  // The confirmations (sync) are accepted.
  c = await openConsoleAs(t, agent, { acceptDialogs: true });
}, 180_000);

afterAll(async () => {
  await c?.close();
  await receiver?.stop();
});

const go = (path: string) => c.go(path);

const pendingTask = (type: string, environmentId = production.id) =>
  cancelPendingTask(c, t, agent, type, environmentId);

describe.sequential('more environment screens', () => {
  eachTestAnswersForProblems(() => c);

  it('environment: "Build" asks for a build; resize and a service priced before their clicks; sync after its confirmation', async () => {
    const { page } = c;
    await go(`/environments/${production.id}`);
    await page.getByText(/without putting it live$/).waitFor();
    await page.getByRole('button', { name: 'Build', exact: true }).click();
    await pendingTask('build');

    // Resize (on staging: without a worker, the cancelled task's change workflow stays open on production and
    // would refuse the sync below): the new plan's price shows before "Resize".
    const web = await t.deps.knex('servers').where({ environment_id: staging.id, role: 'web' }).first();
    const resize = (await agent.get(`/servers/${web.id}/resize`)).body;
    const bigger = resize.choices.find((ch: { monthly_price_delta: number }) => ch.monthly_price_delta > 0);
    await go(`/environments/${staging.id}/machines`);
    expect(await page.getByRole('button', { name: 'Resize', exact: true }).count()).toBe(0);
    await page.getByLabel(`New plan for ${web.name}`).selectOption(bigger.plan);
    const cost = (n: number) => new Intl.NumberFormat('en', { style: 'currency', currency: resize.currency }).format(n);
    await expect
      .poll(() => page.getByRole('status', { name: 'Price preview' }).textContent())
      .toBe(
        `Plan ${bigger.plan}: ${cost(bigger.monthly_price)} a month (+${cost(bigger.monthly_price_delta)} a month)`,
      );
    await page.getByRole('button', { name: 'Resize', exact: true }).click();
    const resized = await pendingTask('resize', staging.id);
    expect(resized.params).toMatchObject({ plan: bigger.plan });

    // The first plan's price (asked when the screen opens) answers only after the picked plan's: the picked one's
    // stays shown (a quick pick on a slow network once showed the first plan's price).
    const choices = (await agent.get(`/environments/${production.id}/services/choices`)).body.data[0];
    const plan = choices.plans[choices.plans.length - 1].id as string;
    let releaseFirst = () => {};
    const firstHeld = new Promise<void>((r) => (releaseFirst = r));
    let firstAnswered = false;
    const previews = `**/environments/${production.id}/services/preview`;
    await page.route(previews, async (route) => {
      if (route.request().postDataJSON()?.plan === plan) return route.continue();
      await firstHeld;
      await route.continue();
      firstAnswered = true;
    });
    await go(`/environments/${production.id}/services`);
    await page.getByText('No services yet: add one below.').waitFor();
    await page.getByLabel('Plan').selectOption(plan);
    const priced = (await agent.post(`/environments/${production.id}/services/preview`, { kind: 'postgresql', plan }))
      .body;
    const money = new Intl.NumberFormat('en', { style: 'currency', currency: priced.currency }).format(
      priced.monthly_price_delta,
    );
    const preview = page.getByRole('status', { name: 'Price preview' });
    await expect.poll(() => preview.textContent(), { timeout: 30_000 }).toContain(`+${money} a month`);
    releaseFirst();
    await expect.poll(() => firstAnswered, { timeout: 30_000 }).toBe(true);
    await c.settled();
    expect(await preview.textContent()).toContain(`+${money} a month`);
    await page.unroute(previews);
    await checkNarrow(c, 'environment-services');
    await page.getByRole('button', { name: 'Create service' }).click();
    const service = await pendingTask('service_create');
    expect(service.params).toMatchObject({ plan });

    // Sync copies another environment's data here: staging has a database to copy, and production one to take it
    // (a source's database needs one here, else the sync is 422): the service whose creation was asked above, as
    // if its task had run (this file has no worker)
    await t.deps.knex('services').insert(availableServiceRow(staging, `env_staging_${Date.now()}`));
    await t.deps.knex('services').where({ id: service.params.service_id }).update({ status: 'available' });
    await go(`/environments/${production.id}/backups`);
    await page.getByLabel('Copy the data of').selectOption(staging.id);
    await page.getByRole('button', { name: 'Sync', exact: true }).click();
    const sync = await pendingTask('sync');
    expect(sync.params).toMatchObject({ from_environment_id: staging.id });
    expect(c.problems).toEqual([]);
  });

  it('environment: the CDN cleared under a path; log forwarding with its test send, and where the logs go', async () => {
    const { page } = c;
    await go(`/environments/${production.id}/cdn`);
    await page.getByLabel('Paths to clear (one a line; empty for everything)').fill('/assets/');
    await checkNarrow(c, 'environment-cdn');
    await page.getByRole('button', { name: 'Clear', exact: true }).click();
    const clear = await pendingTask('cdn_clear');
    expect(clear.params).toMatchObject({ paths: ['/assets/'] });

    await go(`/projects/${project.id}/logs`);
    await page.getByLabel('Kind').selectOption('http');
    await page.getByLabel('Name').fill('collector');
    await page.getByLabel('URL').fill(receiver.url);
    await page.getByRole('button', { name: 'Save destination' }).click();
    // The save made a test send: the collector got it, and the page says it works.
    await page.getByRole('status').filter({ hasText: 'works' }).waitFor();
    expect(receiver.received.some((r) => r.body.includes('a test line from the hosting console'))).toBe(true);
    await page.getByText('collector (http)').waitFor();
    await checkNarrow(c, 'project-logs');
    // A collector that refuses: the next save says so, with the reason.
    receiver.fallback = 503;
    await page.getByLabel('Name').fill('collector');
    await page.getByLabel('URL').fill(receiver.url);
    await page.getByRole('button', { name: 'Save destination' }).click();
    await page.getByRole('status').filter({ hasText: 'does not work' }).waitFor();
    const logs = (await agent.get(`/projects/${project.id}/logs`)).body;
    expect(logs.can_send).toBe(false);
    await page.getByText(logs.last_error).first().waitFor();
    receiver.fallback = 204;
    await page.getByRole('button', { name: 'Save destination' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^works$/ })
      .waitFor();

    await go(`/environments/${production.id}/logs`);
    await page.getByRole('heading', { name: 'Where the logs go' }).waitFor();
    await page.getByText('collector (http)').waitFor();
    await page.locator('dd', { hasText: /^works$/ }).waitFor();
    const where = (await agent.get(`/environments/${production.id}/logs`)).body;
    expect(where.machines.length).toBeGreaterThan(0);
    await page.getByText(`${where.machines[0].keeps_days} days`).first().waitFor();
    await c.screenshot('environment-logs');
    expect(c.problems).toEqual([]);
  });

  it('machines: a reshape, its change and price shown before "Reshape"', async () => {
    const { page } = c;
    // An environment with its machines and a PostgreSQL service on the web machine (combined).
    const db = await createEnvironment(t, project, { name: 'database' });
    await t.deps.knex.transaction((trx) => createEnvironmentMachines(trx, t.deps, db));
    await t.deps.knex('services').insert(availableServiceRow(db, `rest_database_${Date.now()}`));
    const choice = (await agent.get(`/environments/${db.id}/reshape`)).body.choices[0];
    const priced = (
      await agent.post(`/environments/${db.id}/reshape/preview`, { shape: 'separate', plan: choice.plan })
    ).body;
    await go(`/environments/${db.id}/machines`);
    await page.getByText('The database runs on the web machine.').waitFor();
    await page.getByLabel('Change to').selectOption(`separate:${choice.plan}`);
    expect(await page.getByRole('button', { name: 'Reshape', exact: true }).count()).toBe(0);
    await page.getByRole('button', { name: 'Preview', exact: true }).click();
    const money = new Intl.NumberFormat('en', { style: 'currency', currency: priced.currency }).format(
      Math.abs(priced.monthly_price_delta),
    );
    await expect
      .poll(() => page.getByRole('status', { name: 'Price preview' }).textContent())
      .toBe(`separate on ${choice.plan}: +${money} a month`);
    for (const change of priced.changes as string[]) await page.getByText(change).waitFor();
    await c.screenshot('environment-reshape');
    await page.getByRole('button', { name: 'Reshape', exact: true }).click();
    const task = await pendingTask('reshape', db.id);
    expect(task.params).toMatchObject({ shape: 'separate', plan: { id: choice.plan } });
    expect(c.problems).toEqual([]);
  });
});
