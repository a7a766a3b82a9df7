import { describe, expect, it } from 'vitest';
import { html, layout } from '../../../system/mail/layout';
import { escapeHtml } from '../../../system/html';
import {
  confirmationEmail,
  expiryPhrase,
  invitationEmail,
  tokenExpiryReminderEmail,
} from '../../../system/mail/templates';

const BASE_URL = 'https://console.example.test/';

describe('escapeHtml and layout', () => {
  it('escapes the five HTML-special characters', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });

  it('escapes interpolations but keeps nested safe HTML', () => {
    const inner = html`<b>${'<i>'}</b>`;
    expect(html`<p>${inner}${'&'}</p>`.value).toBe('<p><b>&lt;i&gt;</b>&amp;</p>');
  });

  it('escapes the title, preheader and footer', () => {
    const page = layout({ title: '<t>', preheader: '<p>', content: html`<p>ok</p>`, footer: '<f>' });
    expect(page).toContain('&lt;t&gt;');
    expect(page).toContain('&lt;p&gt;');
    expect(page).toContain('&lt;f&gt;');
    expect(page).toContain('<p>ok</p>');
  });
});

describe('confirmationEmail', () => {
  const mail = confirmationEmail({ name: 'Ada <Lovelace>', code: 'K7Q-29X', baseUrl: BASE_URL });

  it('carries the exact confirmation line in the text part', () => {
    expect(mail.text.split('\n')).toContain('Confirmation code: K7Q-29X');
    expect(mail.text).toMatch(/^Hi Ada <Lovelace>,$/m);
  });

  it('keeps the code out of the subject (subjects are logged)', () => {
    expect(mail.subject).not.toContain('K7Q-29X');
  });

  it('shows the code in HTML and escapes the name', () => {
    expect(mail.html).toContain('K7Q-29X');
    expect(mail.html).toContain('Ada &lt;Lovelace&gt;');
    expect(mail.html).not.toContain('<Lovelace>');
  });

  it('names the API call for scripts, without a doubled slash', () => {
    expect(mail.text).toContain('POST https://console.example.test/api/vc/v1/signup/confirm');
  });

  it('mentions when the code stops working, when known', () => {
    const timed = confirmationEmail({
      name: 'Ada',
      code: '1',
      baseUrl: BASE_URL,
      expiresAt: new Date('2025-03-04T09:30:00Z'),
    });
    expect(timed.text).toContain('2025-03-04 at 09:30 UTC');
  });
});

describe('invitationEmail', () => {
  const mail = invitationEmail({
    teamName: 'Acme & Co',
    inviterName: 'Grace Hopper',
    role: 'admin',
    invitationId: 'inv_123',
    baseUrl: BASE_URL,
    expiresAt: new Date('2025-05-01T12:00:00Z'),
  });

  it('says who invited whom to what, in which role', () => {
    expect(mail.subject).toBe('Grace Hopper invited you to join Acme & Co on Hosting Console');
    expect(mail.text).toContain('Grace Hopper has invited you to join the team Acme & Co as an admin.');
  });

  it('explains how to accept: sign in with this address, the console link and the API call', () => {
    expect(mail.text).toMatch(/Sign in .* with this e-mail address/);
    expect(mail.text).toContain('https://console.example.test/invitations/inv_123');
    expect(mail.text).toContain('POST https://console.example.test/api/vc/v1/invitations/inv_123/accept');
    expect(mail.html).toContain('href="https://console.example.test/invitations/inv_123"');
  });

  it('states when it runs out', () => {
    expect(mail.text).toContain('valid until 2025-05-01 at 12:00 UTC');
  });

  it('escapes the team name in HTML', () => {
    expect(mail.html).toContain('Acme &amp; Co');
  });
});

describe('tokenExpiryReminderEmail', () => {
  const now = new Date('2025-03-01T08:00:00Z');
  const input = {
    userName: 'Linus',
    purpose: 'GitHub Actions deploys',
    teamName: 'Acme',
    expiresAt: new Date('2025-03-04T09:30:00Z'),
    now,
    baseUrl: BASE_URL,
  };
  const mail = tokenExpiryReminderEmail(input);

  it('names the purpose, the team, the expiry and the days left', () => {
    expect(mail.subject).toBe('Your access token “GitHub Actions deploys” expires in 3 days');
    expect(mail.text).toContain(
      '“GitHub Actions deploys” for the team Acme expires in 3 days, on 2025-03-04 at 09:30 UTC.',
    );
    expect(mail.html).toContain('GitHub Actions deploys');
    expect(mail.html).toContain('Acme');
    expect(mail.html).toContain('2025-03-04');
  });

  it('links to the tokens page', () => {
    expect(mail.text).toContain('https://console.example.test/account/tokens');
    expect(mail.html).toContain('href="https://console.example.test/account/tokens"');
  });

  it('never contains a token string', () => {
    expect(mail.subject).not.toMatch(/vcp_/);
    expect(mail.text).not.toMatch(/vcp_/);
    expect(mail.html).not.toMatch(/vcp_/);
  });

  it('says tomorrow and today by UTC calendar day', () => {
    expect(tokenExpiryReminderEmail({ ...input, expiresAt: new Date('2025-03-02T01:00:00Z') }).subject).toMatch(
      /expires tomorrow$/,
    );
    expect(tokenExpiryReminderEmail({ ...input, expiresAt: new Date('2025-03-01T23:59:00Z') }).subject).toMatch(
      /expires today$/,
    );
    expect(expiryPhrase(new Date('2025-03-01T07:00:00Z'), now)).toBe('has expired');
    expect(expiryPhrase(new Date('2025-03-15T08:00:00Z'), now)).toBe('expires in 14 days');
  });

  it('promises another reminder only when more than a week is left', () => {
    expect(mail.text).not.toContain('remind you again');
    const early = tokenExpiryReminderEmail({ ...input, expiresAt: new Date('2025-03-13T09:30:00Z') });
    expect(early.text).toContain('remind you again in a week');
  });

  it('escapes the purpose in HTML', () => {
    const sneaky = tokenExpiryReminderEmail({ ...input, purpose: '<img src=x onerror=alert(1)>' });
    expect(sneaky.html).not.toContain('<img');
    expect(sneaky.html).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });
});
