// A real SMTP server on 127.0.0.1 for tests: records what arrives, can refuse on demand.

import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMessage {
  /** Envelope sender (MAIL FROM). */
  from: string;
  /** Envelope recipients (RCPT TO). */
  to: string[];
  subject: string;
  /** The decoded text/plain part ('' when absent). */
  text: string;
  /** The decoded text/html part, or null when the message has none. */
  html: string | null;
  /** Top-level headers, lower-case names, unfolded, encoded-words decoded. */
  headers: Record<string, string>;
  /** Parts sent as attachments, decoded. */
  attachments: MailAttachment[];
  raw: string;
}

interface MailAttachment {
  filename: string;
  type: string;
  content: Buffer;
}

export interface TestSmtpServer {
  port: number;
  url: string;
  messages: ReceivedMessage[];
  waitFor(predicate: (message: ReceivedMessage) => boolean, timeoutMs?: number): Promise<ReceivedMessage>;
  /** While down, every connection is answered `421` and closed. */
  setDown(down: boolean): void;
  stop(): Promise<void>;
}

export async function startSmtpServer(opts: { failFirst?: number } = {}): Promise<TestSmtpServer> {
  const messages: ReceivedMessage[] = [];
  const arrivals = new EventEmitter();
  let down = false;
  let toFail = opts.failFirst ?? 0;

  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    closeTimeout: 1000,
    onConnect(_session, callback) {
      if (!down) return callback();
      callback(Object.assign(new Error('Service not available, try again later'), { responseCode: 421 }));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', callback);
      stream.on('end', () => {
        if (toFail > 0) {
          toFail -= 1;
          return callback(Object.assign(new Error('Temporary failure, try again later'), { responseCode: 451 }));
        }
        const raw = Buffer.concat(chunks);
        const parsed = parseMessage(raw);
        const message: ReceivedMessage = {
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
          subject: parsed.headers.subject ?? '',
          text: parsed.text ?? '',
          html: parsed.html,
          headers: parsed.headers,
          attachments: parsed.attachments,
          raw: raw.toString('utf8'),
        };
        messages.push(message);
        arrivals.emit('message', message);
        callback();
      });
    },
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Errors after start (a client hanging up mid-session) are expected noise in tests.
  server.on('error', () => undefined);
  const port = (server.server.address() as AddressInfo).port;

  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    messages,
    waitFor(predicate, timeoutMs = 10_000) {
      const found = messages.find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const onMessage = (message: ReceivedMessage) => {
          if (!predicate(message)) return;
          clearTimeout(timer);
          arrivals.off('message', onMessage);
          resolve(message);
        };
        const timer = setTimeout(() => {
          arrivals.off('message', onMessage);
          const seen = messages.map((m) => `${m.to.join(',')}: ${m.subject}`).join('; ') || 'none';
          reject(new Error(`no matching e-mail within ${timeoutMs} ms (received: ${seen})`));
        }, timeoutMs);
        arrivals.on('message', onMessage);
      });
    },
    setDown(value) {
      down = value;
    },
    stop() {
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// A small MIME reader: enough for what nodemailer produces (nested multiparts, quoted-printable,
// base64, 7bit/8bit, RFC 2047 encoded-words in headers). Also used to read `.eml` files.

interface ParsedMessage {
  headers: Record<string, string>;
  text: string | null;
  html: string | null;
  attachments: MailAttachment[];
}

export function parseMessage(raw: Buffer | string): ParsedMessage {
  const source = typeof raw === 'string' ? Buffer.from(raw, 'utf8').toString('latin1') : raw.toString('latin1');
  const root = parseEntity(source);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(root.headers)) headers[name] = decodeWords(toUtf8(value));
  const found: Found = { text: null, html: null, attachments: [] };
  collectParts(root, found);
  return { headers, ...found };
}

interface Entity {
  headers: Record<string, string>;
  body: string; // latin1: one char per byte
}

function parseEntity(source: string): Entity {
  const match = /\r?\n\r?\n/.exec(source);
  const head = match ? source.slice(0, match.index) : source;
  const body = match ? source.slice(match.index + match[0].length) : '';
  const headers: Record<string, string> = {};
  const unfolded = head.replace(/\r?\n(?=[ \t])/g, '');
  for (const line of unfolded.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!(name in headers)) headers[name] = line.slice(colon + 1).trim();
  }
  return { headers, body };
}

function headerParams(value: string): { value: string; params: Record<string, string> } {
  const [first, ...rest] = value.split(';');
  const params: Record<string, string> = {};
  for (const part of rest) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    params[part.slice(0, eq).trim().toLowerCase()] = part
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1');
  }
  return { value: first.trim().toLowerCase(), params };
}

type Found = { text: string | null; html: string | null; attachments: MailAttachment[] };

function collectParts(entity: Entity, found: Found): void {
  const type = headerParams(entity.headers['content-type'] ?? 'text/plain');
  const dispositionHeader = headerParams(entity.headers['content-disposition'] ?? 'inline');
  const disposition = dispositionHeader.value;
  if (type.value.startsWith('multipart/') && type.params.boundary) {
    for (const part of splitMultipart(entity.body, type.params.boundary)) collectParts(parseEntity(part), found);
    return;
  }
  if (disposition === 'attachment') {
    found.attachments.push({
      filename: decodeWords(toUtf8(dispositionHeader.params.filename ?? type.params.name ?? '')),
      type: type.value,
      content: decodeTransfer(entity.body, entity.headers['content-transfer-encoding'] ?? '7bit'),
    });
    return;
  }
  if (type.value !== 'text/plain' && type.value !== 'text/html') return;
  const bytes = decodeTransfer(entity.body, entity.headers['content-transfer-encoding'] ?? '7bit');
  const text = decodeCharset(bytes, type.params.charset ?? 'utf-8');
  if (type.value === 'text/plain' && found.text === null) found.text = text;
  if (type.value === 'text/html' && found.html === null) found.html = text;
}

function splitMultipart(body: string, boundary: string): string[] {
  const parts: string[] = [];
  const lines = body.split(/\r?\n/);
  let current: string[] | null = null;
  for (const line of lines) {
    const trimmed = line.trimEnd();
    if (trimmed === `--${boundary}--`) break;
    if (trimmed === `--${boundary}`) {
      if (current) parts.push(current.join('\r\n'));
      current = [];
      continue;
    }
    current?.push(line);
  }
  if (current) parts.push(current.join('\r\n'));
  return parts;
}

function decodeTransfer(body: string, encoding: string): Buffer {
  switch (encoding.trim().toLowerCase()) {
    case 'base64':
      return Buffer.from(body.replace(/[^A-Za-z0-9+/=]/g, ''), 'base64');
    case 'quoted-printable':
      return decodeQuotedPrintable(body);
    default:
      return Buffer.from(body.replace(/\r\n/g, '\n'), 'latin1');
  }
}

function decodeQuotedPrintable(body: string): Buffer {
  const joined = body.replace(/\r\n/g, '\n').replace(/=\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < joined.length; i++) {
    const ch = joined[i];
    if (ch === '=' && /^[0-9A-Fa-f]{2}$/.test(joined.slice(i + 1, i + 3))) {
      bytes.push(parseInt(joined.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(joined.charCodeAt(i) & 0xff);
    }
  }
  return Buffer.from(bytes);
}

function decodeCharset(bytes: Buffer, charset: string): string {
  try {
    return new TextDecoder(charset).decode(bytes);
  } catch {
    return bytes.toString('utf8');
  }
}

function toUtf8(latin1: string): string {
  return Buffer.from(latin1, 'latin1').toString('utf8');
}

/** RFC 2047: `=?UTF-8?Q?caf=C3=A9?=` -> `café`; whitespace between adjacent encoded-words is dropped. */
function decodeWords(value: string): string {
  return value
    .replace(/(\?=)\s+(=\?)/g, '$1$2')
    .replace(/=\?([^?]+)\?([BbQq])\?([^?]*)\?=/g, (_all, charset: string, kind: string, text: string) => {
      const bytes =
        kind.toUpperCase() === 'B' ? Buffer.from(text, 'base64') : decodeQuotedPrintable(text.replace(/_/g, ' '));
      return decodeCharset(bytes, charset);
    });
}
