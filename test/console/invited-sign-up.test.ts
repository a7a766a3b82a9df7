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

describe('an account whose address was never confirmed', () => {
  it('signs in later: the console asks for the code, sends a new one on request, and goes on signed in', async () => {
    const { page, problems } = browser();
    await page.context().clearCookies();
    const email = `later-${Date.now()}@example.test`;
    // signed up, then the tab was closed before the code came
    const signedUp = await t.agent().post('/signup', { name: 'Lena Later', email, password: 'a later long password' });
    expect(signedUp.status, signedUp.text).toBe(201);
    await t.smtp!.waitFor((m) => m.to.includes(email) && /Confirmation code:/.test(m.text));

    await page.goto(`${t.baseUrl}/sign-in`);
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel('Password').fill('a later long password');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    // before, the form said "enter the code we sent, or ask for a new one" and offered neither
    await page.getByRole('heading', { name: 'Confirm your e-mail address' }).waitFor();
    await page.getByText(`We sent a code to ${email}. Type it here.`).waitFor();
    await page.getByRole('button', { name: 'Send the code again' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `A new code is on its way to ${email}` })
      .waitFor();
    await browser().screenshot('sign-in-unconfirmed');
    const codes = async () => t.smtp!.messages.filter((m) => m.to.includes(email) && /Confirmation code:/.test(m.text));
    await expect.poll(async () => (await codes()).length).toBe(2);
    const code = /^Confirmation code: (\S+)$/m.exec((await codes())[1].text)![1];
    await page.getByLabel('Confirmation code').fill(code);
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    const user = await t.deps.knex('users').where({ email }).first();
    expect(user.email_confirmed_at).not.toBeNull();
    expect(await t.deps.knex('sessions').where({ user_id: user.id })).toHaveLength(1);
    expect(problems).toEqual([]);
  });

  it('a wrong password is refused as for any account: no code is asked for, nothing is sent', async () => {
    const { page, problems } = browser();
    await page.context().clearCookies();
    const email = `wrong-${Date.now()}@example.test`;
    expect(
      (await t.agent().post('/signup', { name: 'Will Wrong', email, password: 'the right long password' })).status,
    ).toBe(201);
    await t.smtp!.waitFor((m) => m.to.includes(email));
    await page.goto(`${t.baseUrl}/sign-in`);
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel('Password').fill('not the password at all');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByText('The e-mail address or the password is wrong').waitFor();
    expect(await page.getByRole('heading', { name: 'Confirm your e-mail address' }).count()).toBe(0);
    expect(t.smtp!.messages.filter((m) => m.to.includes(email))).toHaveLength(1);
    expect(problems).toEqual([]);
  });
});
