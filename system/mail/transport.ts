// Sends e-mail over SMTP (SMTP_URL) or, without one, writes each message as an RFC 822 `.eml` file
// under the mail directory. Logs recipient and subject only: bodies can carry confirmation codes.

import { randomBytes } from 'node:crypto';
import { mkdir, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';

interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** Files sent with the message (support tickets' screenshots). */
  attachments?: Array<{ filename: string; content: Buffer; contentType: string }>;
  replyTo?: string;
}

interface SendResult {
  messageId: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<SendResult>;
  close(): void;
  /** Where mail goes, safe to print: `smtp://host:port` (no credentials) or the mail directory. */
  readonly destination: string;
}

/** The part of a pino logger the mailer uses. */
export interface MailLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

interface MailerOptions {
  /** smtp://user:pass@host:port or smtps://...; query options such as `?tls.rejectUnauthorized=false`. */
  smtpUrl?: string;
  /** Used when smtpUrl is unset: one `<timestamp>-<messageId>.eml` file per message. */
  mailDir: string;
  from: string;
  logger: MailLogger;
}

// Bounded waits, so a stuck server fails the attempt (and Temporal retries it) instead of hanging.
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

export function createMailer(opts: MailerOptions): Mailer {
  return opts.smtpUrl ? createSmtpMailer(opts, opts.smtpUrl) : createFileMailer(opts);
}

/**
 * True for an SMTP answer that retrying will not change (5xx, e.g. a refused recipient);
 * false for 4xx answers and connection failures, which are worth retrying.
 */
export function isPermanentMailError(err: unknown): boolean {
  const code = (err as { responseCode?: unknown } | null)?.responseCode;
  return typeof code === 'number' && code >= 500 && code < 600;
}

/** `smtp://user:secret@host:25/?x=y` -> `smtp://host:25` */
export function describeSmtpUrl(smtpUrl: string): string {
  try {
    const url = new URL(smtpUrl);
    return `${url.protocol}//${url.host}`;
  } catch {
    return 'smtp (unparsable SMTP_URL)';
  }
}

function createSmtpMailer(opts: MailerOptions, smtpUrl: string): Mailer {
  // nodemailer parses the URL itself: scheme (smtps: implicit TLS), user:pass (decoded), and query
  // options (`tls.*` nested). Keys given beside `url` apply where the URL does not set them.
  const transport = nodemailer.createTransport({ url: smtpUrl, ...SMTP_TIMEOUTS });
  const destination = describeSmtpUrl(smtpUrl);
  return {
    destination,
    async send(message) {
      try {
        const info = await transport.sendMail({ from: opts.from, ...message });
        opts.logger.info({ to: message.to, subject: message.subject, messageId: info.messageId }, 'mail sent');
        return { messageId: info.messageId };
      } catch (err) {
        const e = err as { code?: string; responseCode?: number; message?: string };
        opts.logger.warn(
          { to: message.to, subject: message.subject, destination, code: e.code, responseCode: e.responseCode },
          'mail not sent',
        );
        throw err;
      }
    },
    close() {
      transport.close();
    },
  };
}

function createFileMailer(opts: MailerOptions): Mailer {
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  const dir = path.resolve(opts.mailDir);
  return {
    destination: dir,
    async send(message) {
      const info = await transport.sendMail({ from: opts.from, ...message });
      const raw = info.message as Buffer;
      await mkdir(dir, { recursive: true });
      const file = path.join(dir, emlFileName(new Date(), info.messageId));
      // Write beside the target under a dot-name, then rename: readers never see half a message.
      const tmp = path.join(dir, `.${path.basename(file)}.${randomBytes(4).toString('hex')}.tmp`);
      try {
        await writeFile(tmp, raw, { flag: 'wx' });
        await rename(tmp, file);
      } catch (err) {
        await unlink(tmp).catch(() => undefined);
        throw err;
      }
      opts.logger.info({ to: message.to, subject: message.subject, messageId: info.messageId, file }, 'mail written');
      return { messageId: info.messageId };
    },
    close() {
      transport.close();
    },
  };
}

/** `20250304T093000123Z-<message id without <> and unsafe characters>.eml`: sorts by time. */
export function emlFileName(at: Date, messageId: string): string {
  const stamp = at.toISOString().replace(/[-:.]/g, '');
  const id =
    messageId
      .replace(/^<|>$/g, '')
      .replace(/[^A-Za-z0-9._@-]/g, '_')
      .slice(0, 120) || 'message';
  return `${stamp}-${id}.eml`;
}
