import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import {
  type ConsoleBrowser,
  axeViolations,
  checkNarrow,
  eachTestAnswersForProblems,
  openConsoleAs,
} from '../helpers/console-browser';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { availableServiceRow, createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import type { Agent } from '../helpers/http';

/**
 * The Backups screen's "Restore to a point in time" (issue 27 item 6): where the API answers 409 to the
 * recovery window, the reason shows in plain words instead of the form. The test context's services server is
 * SERVICES_DATABASE_URL, one the console does not run: no point-in-time recovery there.
 */
const t = useTestContext();
let c: ConsoleBrowser;
let agent: Agent;
let environment: Awaited<ReturnType<typeof createEnvironment>>;

beforeAll(async () => {
  const owner = await createUser(t, { name: 'Pia Pitr' });
  const team = await createTeam(t, owner, 'PITR screen team');
  const project = await createProject(t, team, { name: 'pitr-shop' });
  environment = await createEnvironment(t, project, { name: 'production' });
  agent = await sessionAgent(t, owner);
  c = await openConsoleAs(t, agent);
}, 180_000);

afterAll(async () => {
  await c?.close();
});

describe.sequential('Restore to a point in time', () => {
  eachTestAnswersForProblems(() => c);

  it("says why there is no form: no database service, then the API's reason for no point-in-time recovery", async () => {
    const { page } = c;
    const backups = `/environments/${environment.id}/backups`;
    const section = page.getByRole('region', { name: 'Restore to a point in time' });

    await c.go(backups);
    await section.getByText('This environment has no database service').waitFor();
    expect((await agent.get(`/environments/${environment.id}/recovery-window`)).body.error.code).toBe(
      'no_database_service',
    );
    expect(await section.getByRole('button', { name: 'Restore to this second' }).count()).toBe(0);
    expect(await section.locator('input').count()).toBe(0);

    await t.deps.knex('services').insert(availableServiceRow(environment, 'svc_pitr_screen'));
    const refused = (await agent.get(`/environments/${environment.id}/recovery-window`)).body.error;
    expect(refused.code).toBe('pitr_unavailable');
    expect(refused.reason).toMatch(/SERVICES_DATABASE_URL/);
    await c.go(backups);
    const notice = section.locator('[data-pitr-unavailable]');
    await notice.getByText(refused.message).waitFor();
    expect(await notice.textContent()).toContain(refused.reason);
    expect(await section.locator('input').count()).toBe(0);
    expect(await t.deps.knex('tasks').where({ environment_id: environment.id })).toEqual([]);

    expect(await axeViolations(page, 'environment-backups-pitr')).toEqual([]);
    await c.screenshot('environment-backups-pitr-unavailable');
    await checkNarrow(c, 'environment-backups-pitr');
    expect(c.problems).toEqual([]);
  });
});
