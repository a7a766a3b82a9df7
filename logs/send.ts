/**
 * Sending a batch of log lines to a project's destination (CONTRACT "Logs"), always through the outbound
 * guard (host/provider/outbound.ts): http is a POST of newline-delimited JSON
 * (`application/x-ndjson`) that must answer 2xx; syslog is RFC 5424 messages, one datagram each over udp,
 * octet-counted (RFC 6587) over tcp. Errors are phrased without the URL (it may carry credentials).
 */
import dgram from 'node:dgram';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import {
  checkOutboundHost,
  guardedLookup,
  OutboundRefused,
  outboundRequest,
  type OutboundConfig,
} from '../host/outbound';
import { blockOf, splitLines } from './queue';

export type Destination =
  | { kind: 'http'; name: string; url: string }
  | { kind: 'syslog'; name: string; host: string; port: number; protocol: 'udp' | 'tcp' };

/** One log line: what the edge or a web process said, as a JSON object. */
export interface LogLine {
  time: string;
  environment_id: string | null;
  /** 'request' (the edge's request log), 'stderr' (a web process's error output), 'test', 'dropped'. */
  type: string;
  [field: string]: unknown;
}

const TIMEOUT_MS = 10_000;
/**
 * http destinations keep their connections between batches (a connect a batch was ~0.5 µs of a line's ~4 in
 * `npm run bench -- shipper`, and an https destination's TLS handshake much more). An idle one is closed after
 * 4 s, before a Node collector's own 5 s keep-alive timeout; one the collector closed as it was reused is replaced
 * (host/outbound.ts).
 */
const KEEP_ALIVE = { keepAlive: true, timeout: 4_000, maxSockets: 8, maxFreeSockets: 4 };
const AGENTS = { http: new http.Agent(KEEP_ALIVE), https: new https.Agent(KEEP_ALIVE) };
/** Syslog datagrams sent before waiting for the socket (a batch is up to 500). */
const UDP_CHUNK = 64;
const HOSTNAME = (os.hostname() || 'vc').replace(/[^\x21-\x7e]/g, '').slice(0, 255) || 'vc';

const TYPE_KEY = '"type":"';
const TIME_PREFIX = '{"time":"';

/**
 * RFC 5424: `<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID [SD] MSG`; facility local0, info or err. The line
 * is JSON text, its time first, its type among the first fields (logs/shipper.ts `lineText`, the request log's
 * reader): both are read from the text, never parsed.
 */
function syslogText(envId: string | null, text: string): string {
  const time = text.startsWith(TIME_PREFIX) ? text.slice(TIME_PREFIX.length, TIME_PREFIX.length + 24) : '-';
  const at = text.indexOf(TYPE_KEY);
  const type = at < 0 ? 'log' : text.slice(at + TYPE_KEY.length, text.indexOf('"', at + TYPE_KEY.length));
  const stderr = type === 'stderr';
  const sd = envId ? `[vc@32473 environment_id="${envId}"]` : '-';
  return `<${stderr ? 131 : 134}>1 ${time} ${HOSTNAME} ${stderr ? 'web' : 'edge'} - ${type} ${sd} ${text}`;
}

/** A short reason fit for `last_error` (never the URL). */
export function describeFailure(err: unknown): string {
  if (err instanceof OutboundRefused) return `the destination ${err.message}`;
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'ECONNREFUSED') return 'the connection was refused';
  if (e?.code === 'ENOTFOUND' || e?.code === 'EAI_AGAIN') return 'the host name does not resolve';
  if (e?.code === 'ECONNRESET') return 'the connection was reset';
  if (e?.code === 'ETIMEDOUT') return 'the connection timed out';
  const text = String(e?.message ?? err);
  return text.replace(/https?:\/\/\S+/g, '<url>').slice(0, 300);
}

/** Sends the lines; resolves when the destination took them, throws (with a describable error) otherwise. */
export function sendLines(dest: Destination, lines: LogLine[], outbound: OutboundConfig): Promise<void> {
  const texts = lines.map(({ time, environment_id, type, ...rest }) =>
    JSON.stringify({ time, environment_id, type, ...rest }),
  );
  const blocks = texts.length ? [blockOf(`${texts.join('\n')}\n`)] : [];
  return sendBlocks(dest, lines[0]?.environment_id ?? null, blocks, outbound);
}

/**
 * Sends blocks of lines of one environment (`envId`; null: the console's own test line). A block (logs/queue.ts) is
 * JSON texts, their time first, each ended by a newline: an http batch is the blocks as they are, a syslog message a
 * line behind its header.
 */
export async function sendBlocks(
  dest: Destination,
  envId: string | null,
  blocks: Buffer[],
  outbound: OutboundConfig,
): Promise<void> {
  if (blocks.length === 0) return;
  if (dest.kind === 'http') {
    // the blocks as they are, one after the other (Buffers: not measured and encoded again by node:http; not copied
    // into one: each copy was memory outside the heap to collect)
    const res = await outboundRequest(
      dest.url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/x-ndjson', 'user-agent': 'vc-log-shipper' },
        body: blocks,
        timeoutMs: TIMEOUT_MS,
        maxBytes: 4096,
        maxRedirects: 0,
        agents: AGENTS,
      },
      outbound,
    );
    if (res.status < 200 || res.status > 299) throw new Error(`the collector answered ${res.status}`);
    return;
  }
  const messages: string[] = [];
  for (const block of blocks) for (const l of splitLines(block)) messages.push(syslogText(envId, l));
  if (dest.protocol === 'udp') return sendUdp(dest.host, dest.port, messages, outbound);
  return sendTcp(dest.host, dest.port, messages, outbound);
}

async function sendUdp(host: string, port: number, messages: string[], outbound: OutboundConfig): Promise<void> {
  const [address] = await checkOutboundHost(host, outbound);
  const socket = dgram.createSocket(address.includes(':') ? 'udp6' : 'udp4');
  try {
    // connected: each send skips the address's checks (~0.5 µs a datagram here, of ~5.5, most of it the kernel's)
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.connect(port, address, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    // the datagrams handed to the socket UDP_CHUNK at a time (it sends them in order), one wait per chunk: only
    // a chunk's last datagram has a callback, an earlier one's error comes as the socket's 'error'; the first
    // error fails the batch
    let fail: ((err: Error) => void) | null = null;
    socket.on('error', (err) => fail?.(err));
    for (let i = 0; i < messages.length; i += UDP_CHUNK) {
      const end = Math.min(messages.length, i + UDP_CHUNK);
      await new Promise<void>((resolve, reject) => {
        fail = reject;
        for (let k = i; k < end - 1; k++) socket.send(messages[k]);
        socket.send(messages[end - 1], (err) => (err ? reject(err) : resolve()));
      });
    }
  } finally {
    socket.close();
  }
}

function sendTcp(host: string, port: number, messages: string[], outbound: OutboundConfig): Promise<void> {
  const frames = messages.map((m) => `${Buffer.byteLength(m)} ${m}`).join('');
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port, lookup: guardedLookup(outbound), timeout: TIMEOUT_MS });
    let done = false;
    const finish = (err?: Error) => {
      if (done) return;
      done = true;
      socket.destroy();
      if (err) reject(err);
      else resolve();
    };
    socket.once('error', (err) => finish(err));
    socket.once('timeout', () => finish(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    socket.once('connect', () => {
      socket.end(frames, () => finish());
    });
  });
}
