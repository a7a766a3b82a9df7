import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { useConsole } from '../helpers/console-browser';
import { createTeam, createUser, PASSWORD, sessionAgent } from '../helpers/fixtures';

/**
 * A person invited at an address with no account yet: the invitation's link, signing up from it, the code from the
 * e-mail, and back on the invitation to accept it (before, the console went on to the dashboard, which does not
 * show the invitation). The sign-up form's "Sign in" keeps where the person was going too.
 */
const t = useTestContext({ smtp: true });
const browser = useConsole(t);

describe('signing up from an invitation', () => {
  it('comes back to the invitation once the address is confirmed, and the invited person accepts it', async () => {
    const { page, problems } = browser();
    const owner = await createUser(t, { name: 'Inviting Ida' });
    const team = await createTeam(t, owner, 'Ida team');
    const email = `new-${Date.now()}@example.test`;
    const invited = await (await sessionAgent(t, owner)).post(`/teams/${team.id}/invitations`, {
      email,
      role: 'developer',
    });
    expect(invited.status, invited.text).toBe(201);
    const invitation = `/invitations/${invited.body.id}`;
    const mail = await t.smtp!.waitFor((m) => m.to.includes(email) && m.subject.includes('Ida team'));
    expect(mail.text).toContain(`${t.baseUrl}${invitation}`);

    await page.goto(`${t.baseUrl}${invitation}`);
    await page.getByRole('link', { name: 'Sign up' }).click();
    // the form's way back to signing in keeps the invitation too
    const signIn = page.getByRole('link', { name: 'Sign in' });
    expect(await signIn.getAttribute('href')).toBe(`/sign-in?next=${encodeURIComponent(invitation)}`);
    await page.getByLabel('Name').fill('Nell New');
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel('Password').fill('a new long password');
    await page.getByRole('button', { name: 'Sign up', exact: true }).click();
    const confirmation = await t.smtp!.waitFor((m) => m.to.includes(email) && /Confirmation code:/.test(m.text));
    const code = /^Confirmation code: (\S+)$/m.exec(confirmation.text)![1];
    await page.getByLabel('Confirmation code').fill(code);
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await page.waitForURL(`${t.baseUrl}${invitation}`);
    await page.getByRole('button', { name: 'Accept', exact: true }).click();
    await page.waitForURL(`${t.baseUrl}/teams/${team.id}`);
    await page.getByRole('heading', { name: 'Ida team' }).waitFor();
    const user = await t.deps.knex('users').where({ email }).first();
    const joined = await t.deps.knex('memberships').where({ team_id: team.id, user_id: user.id }).first();
    expect(joined.role).toBe('developer');
    expect(problems).toEqual([]);
  });

  it("an address that has an account signs in from the sign-up form's link and lands on the invitation", async () => {
    const { page, problems } = browser();
    await page.context().clearCookies();
    const owner = await createUser(t, { name: 'Inviting Ike' });
    const team = await createTeam(t, owner, 'Ike team');
    const member = await createUser(t, { name: 'Has Account' });
    const invited = await (await sessionAgent(t, owner)).post(`/teams/${team.id}/invitations`, {
      email: member.email,
      role: 'viewer',
    });
    expect(invited.status, invited.text).toBe(201);
    const invitation = `/invitations/${invited.body.id}`;
    await page.goto(`${t.baseUrl}/sign-up?next=${encodeURIComponent(invitation)}`);
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.getByLabel('E-mail address').fill(member.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL(`${t.baseUrl}${invitation}`);
    await page.getByRole('button', { name: 'Accept', exact: true }).waitFor();
    expect(problems).toEqual([]);
  });
});
