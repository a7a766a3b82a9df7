// A real HTTP receiver on 127.0.0.1 for webhook and Slack deliveries: records what arrives and
// answers what the test says (a status per request), or is not listening at all until started.

import { createServer, type IncomingMessage, type Server } from 'node:http';

interface Received {
  /** The request's path and query. */
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  at: number;
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Status of the next answers, in order; then `fallback`. */
  answers: number[];
  fallback: number;
  /** Everything received, once `n` requests have come; fails after `timeoutMs` (20 s) saying how many came. */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  stop(): Promise<void>;
}

export async function startReceiver(port = 0, path = '/hook'): Promise<Receiver> {
  const received: Received[] = [];
  const r = { received, answers: [] as number[], fallback: 204 } as unknown as Receiver;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      });
      res.statusCode = r.answers.length ? r.answers.shift()! : r.fallback;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const actual = (server.address() as { port: number }).port;
  Object.assign(r, {
    port: actual,
    url: `http://127.0.0.1:${actual}${path}`,
    async waitFor(n: number, timeoutMs = 20_000) {
      const end = Date.now() + timeoutMs;
      while (received.length < n && Date.now() < end) await new Promise((res) => setTimeout(res, 50));
      if (received.length < n)
        throw new Error(`${n} requests expected at ${path} within ${timeoutMs} ms; ${received.length} came`);
      return received;
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
  return r;
}
