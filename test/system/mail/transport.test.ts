import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createMailer,
  describeSmtpUrl,
  emlFileName,
  isPermanentMailError,
  type MailLogger,
} from '../../../system/mail/transport';
import { confirmationEmail } from '../../../system/mail/templates';
import { parseMessage, startSmtpServer, type TestSmtpServer } from '../../helpers/smtp';

const FROM = 'Hosting Console <no-reply@console.test>';
const BASE_URL = 'http://console.test';

function captureLogger(): MailLogger & { lines: Array<{ level: string; obj: object; msg?: string }> } {
  const lines: Array<{ level: string; obj: object; msg?: string }> = [];
  return {
    lines,
    info: (obj, msg) => lines.push({ level: 'info', obj, msg }),
    warn: (obj, msg) => lines.push({ level: 'warn', obj, msg }),
  };
}

describe('createMailer with SMTP_URL', () => {
  let smtp: TestSmtpServer;

  beforeAll(async () => {
    smtp = await startSmtpServer();
  });
  afterEach(() => smtp.setDown(false));
  afterAll(async () => {
    await smtp.stop();
  });

  it('delivers the confirmation e-mail with its code line and an HTML part', async () => {
    const logger = captureLogger();
    const mailer = createMailer({ smtpUrl: smtp.url, mailDir: '/nonexistent', from: FROM, logger });
    const message = confirmationEmail({ name: 'Ada', code: '482913', baseUrl: BASE_URL });
    const { messageId } = await mailer.send({ to: 'ada@example.test', ...message });
    mailer.close();

    const got = await smtp.waitFor((m) => m.to.includes('ada@example.test'));
    expect(got.to).toEqual(['ada@example.test']);
    expect(got.from).toBe('no-reply@console.test');
    expect(got.subject).toBe(message.subject);
    expect(got.headers['message-id']).toBe(messageId);
    expect(got.text).toMatch(/^Confirmation code: 482913$/m);
    expect(got.html).toContain('482913');
    expect(got.html).toContain('<html');
  });

  it('logs the recipient and subject, never the body', async () => {
    const logger = captureLogger();
    const mailer = createMailer({ smtpUrl: smtp.url, mailDir: '/nonexistent', from: FROM, logger });
    const message = confirmationEmail({ name: 'Bea', code: '777123', baseUrl: BASE_URL });
    await mailer.send({ to: 'bea@example.test', ...message });
    mailer.close();

    expect(logger.lines).toHaveLength(1);
    expect(logger.lines[0].obj).toMatchObject({ to: 'bea@example.test', subject: message.subject });
    expect(JSON.stringify(logger.lines)).not.toContain('777123');
  });

  it('honours query options in the URL (tls.rejectUnauthorized=false)', async () => {
    const mailer = createMailer({
      smtpUrl: `${smtp.url}/?tls.rejectUnauthorized=false`,
      mailDir: '/nonexistent',
      from: FROM,
      logger: captureLogger(),
    });
    await mailer.send({ to: 'query@example.test', subject: 'Query', text: 'hello', html: '<p>hello</p>' });
    mailer.close();
    await smtp.waitFor((m) => m.to.includes('query@example.test'));
  });

  it('rejects while the server is down and succeeds once it is back', async () => {
    const logger = captureLogger();
    const mailer = createMailer({ smtpUrl: smtp.url, mailDir: '/nonexistent', from: FROM, logger });
    const message = { to: 'retry@example.test', subject: 'Retry me', text: 'secret body', html: '<p>secret body</p>' };

    smtp.setDown(true);
    await expect(mailer.send(message)).rejects.toThrow();
    expect(smtp.messages.some((m) => m.to.includes('retry@example.test'))).toBe(false);
    expect(logger.lines.at(-1)).toMatchObject({
      level: 'warn',
      obj: { to: 'retry@example.test', subject: 'Retry me' },
    });
    expect(JSON.stringify(logger.lines)).not.toContain('secret body');

    smtp.setDown(false);
    await expect(mailer.send(message)).resolves.toMatchObject({ messageId: expect.any(String) });
    mailer.close();
    await smtp.waitFor((m) => m.to.includes('retry@example.test'));
  });

  it('rejects with the temporary SMTP answer when a message is refused', async () => {
    const flaky = await startSmtpServer({ failFirst: 1 });
    try {
      const mailer = createMailer({ smtpUrl: flaky.url, mailDir: '/nonexistent', from: FROM, logger: captureLogger() });
      const message = { to: 'flaky@example.test', subject: 'Flaky', text: 'x', html: '<p>x</p>' };
      const err = await mailer.send(message).catch((e: unknown) => e);
      expect(err).toMatchObject({ responseCode: 451 });
      expect(isPermanentMailError(err)).toBe(false);
      await mailer.send(message);
      mailer.close();
      expect(flaky.messages).toHaveLength(1);
    } finally {
      await flaky.stop();
    }
  });

  it('fails fast when nothing listens on the port', async () => {
    const gone = await startSmtpServer();
    const url = gone.url;
    await gone.stop();
    const mailer = createMailer({ smtpUrl: url, mailDir: '/nonexistent', from: FROM, logger: captureLogger() });
    await expect(mailer.send({ to: 'x@example.test', subject: 'x', text: 'x', html: 'x' })).rejects.toThrow();
    mailer.close();
  });
});

describe('createMailer without SMTP_URL', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'mail-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes each message as a readable .eml file under the mail directory', async () => {
    const mailDir = path.join(dir, 'nested', 'mail');
    const mailer = createMailer({ mailDir, from: FROM, logger: captureLogger() });
    expect(mailer.destination).toBe(mailDir);
    const message = confirmationEmail({ name: 'Cy', code: '100200', baseUrl: BASE_URL });
    const first = await mailer.send({ to: 'cy@example.test', ...message });
    const second = await mailer.send({ to: 'cy@example.test', ...message });
    mailer.close();
    expect(first.messageId).not.toBe(second.messageId);

    const files = (await readdir(mailDir)).sort();
    expect(files).toHaveLength(2); // no temporary files left behind
    for (const file of files) expect(file).toMatch(/^\d{8}T\d{9}Z-[A-Za-z0-9._@-]+\.eml$/);

    const raw = await readFile(path.join(mailDir, files[0]));
    expect(raw.toString('latin1')).toContain('\r\n'); // RFC 822 line endings
    const parsed = parseMessage(raw);
    expect(parsed.headers.to).toBe('cy@example.test');
    expect(parsed.headers.from).toContain('no-reply@console.test');
    expect(parsed.headers.subject).toBe(message.subject);
    expect(parsed.text).toMatch(/^Confirmation code: 100200$/m);
    expect(parsed.html).toContain('100200');
  });
});

describe('helpers', () => {
  it('describes an SMTP URL without its credentials', () => {
    expect(describeSmtpUrl('smtps://user:secret@mail.example.test:465/?tls.rejectUnauthorized=false')).toBe(
      'smtps://mail.example.test:465',
    );
  });

  it('names .eml files by time and a file-safe message id', () => {
    expect(emlFileName(new Date('2025-03-04T09:30:00.123Z'), '<a1/b2@x.test>')).toBe(
      '20250304T093000123Z-a1_b2@x.test.eml',
    );
  });

  it('treats 5xx answers as permanent and the rest as retryable', () => {
    expect(isPermanentMailError(Object.assign(new Error('no'), { responseCode: 550 }))).toBe(true);
    expect(isPermanentMailError(Object.assign(new Error('later'), { responseCode: 421 }))).toBe(false);
    expect(isPermanentMailError(Object.assign(new Error('refused'), { code: 'ECONNECTION' }))).toBe(false);
  });
});
