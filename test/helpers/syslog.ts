// A real syslog listener on 127.0.0.1 for log forwarding tests: UDP (one message a datagram) or TCP
// (RFC 6587 octet counting, or newline framing when a frame does not start with a length), recording
// every message that arrives.

import dgram from 'node:dgram';
import net from 'node:net';
import { expect } from 'vitest';
import type { Agent } from './http';
import { until } from './until';

export interface SyslogListener {
  protocol: 'udp' | 'tcp';
  port: number;
  messages: string[];
  waitFor(predicate: (messages: string[]) => boolean, timeoutMs?: number): Promise<string[]>;
  stop(): Promise<void>;
}

/** Splits a TCP stream into messages; returns what is left over (an unfinished frame). */
function frames(buffer: string, out: string[]): string {
  let rest = buffer;
  for (;;) {
    const m = /^(\d+) /.exec(rest);
    if (m) {
      const len = Number(m[1]);
      const body = Buffer.from(rest.slice(m[0].length));
      if (body.length < len) return rest;
      out.push(body.subarray(0, len).toString('utf8'));
      rest = body.subarray(len).toString('utf8');
      continue;
    }
    const nl = rest.indexOf('\n');
    if (nl < 0) return rest;
    out.push(rest.slice(0, nl));
    rest = rest.slice(nl + 1);
  }
}

export async function startSyslog(protocol: 'udp' | 'tcp', port = 0): Promise<SyslogListener> {
  const messages: string[] = [];
  let close: () => Promise<void>;
  let actual: number;
  if (protocol === 'udp') {
    const socket = dgram.createSocket('udp4');
    socket.on('message', (msg) => messages.push(msg.toString('utf8')));
    await new Promise<void>((resolve) => socket.bind(port, '127.0.0.1', resolve));
    actual = socket.address().port;
    close = () => new Promise((resolve) => socket.close(() => resolve()));
  } else {
    const sockets = new Set<net.Socket>();
    const server = net.createServer((s) => {
      sockets.add(s);
      let buffer = '';
      s.on('data', (chunk) => {
        buffer = frames(buffer + chunk.toString('utf8'), messages);
      });
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    actual = (server.address() as net.AddressInfo).port;
    close = () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      });
  }
  return {
    protocol,
    port: actual,
    messages,
    async waitFor(predicate, timeoutMs = 20_000) {
      const end = Date.now() + timeoutMs;
      while (!predicate(messages) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      if (!predicate(messages))
        throw new Error(
          `the syslog ${protocol} listener's messages did not match within ${timeoutMs} ms; ${messages.length} came`,
        );
      return messages;
    },
    stop: () => close(),
  };
}

/** Saves `listener` as the project's log destination (as `owner`, a session); the save must say it can send. */
export async function saveSyslogDestination(owner: Agent, projectId: string, listener: SyslogListener) {
  const { protocol, port } = listener;
  const saved = await owner.post(`/projects/${projectId}/logs`, {
    destination: { kind: 'syslog', name: protocol, host: '127.0.0.1', port, protocol },
  });
  expect(saved.body.can_send).toBe(true);
}

/**
 * Keeps sending `request` (a pause of `intervalMs` after each) until a message that `matches` has reached
 * `listener`, and gives that message: for a destination just saved, which the shippers read again within
 * seconds (lines made before then go to the destination before it).
 */
export function requestUntilMessage(
  listener: SyslogListener,
  matches: (message: string) => boolean,
  request: () => Promise<unknown>,
  opts: { timeoutMs: number; intervalMs: number },
): Promise<string> {
  return until(
    `a matching message over syslog (${listener.protocol})`,
    async () => {
      const message = listener.messages.find(matches);
      if (message === undefined) await request();
      return message;
    },
    opts,
  );
}
