/**
 * A loopback relay to a real server that drops the connection when the answer to the first request whose head
 * matches comes back: the server did the work, and the client never hears of it (a network that failed on the way
 * back, a proxy restarted). Everything else is relayed as it is, the same request sent again included.
 */
import { type AddressInfo, connect, createServer } from 'node:net';

interface AnswerDroppingRelay {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** How many requests matched: the first, whose answer was dropped, and any sent again. */
  matched(): number;
  /** Whether the answer to a first match was dropped. */
  dropped(): boolean;
  close(): void;
}

/**
 * `match` sees the start of a request as it arrives (`POST /api/vc/v1/... HTTP/1.1`, headers after it). It may name
 * the request's kind (a string) instead of answering true: the answer to the first request of each kind is dropped.
 * Chromium sends a POST again by itself when a kept-alive connection it reused closes before any answer, so whether the
 * console's own retry is what sent it again would depend on timing. The relay therefore answers every request with
 * `Connection: close`: each request goes out on a fresh connection, Chromium never sends one again by itself, and it logs
 * each lost answer once (`net::ERR_EMPTY_RESPONSE`).
 */
export async function answerDroppingRelay(
  port: number,
  match: (head: string) => boolean | string,
): Promise<AnswerDroppingRelay & { matchedOf(kind: string): number }> {
  const byKind = new Map<string, number>();
  let matched = 0;
  let dropped = false;
  const server = createServer((socket) => {
    const upstream = connect(port, '127.0.0.1');
    let dropAnswer = false;
    socket.on('data', (chunk: Buffer) => {
      const kind = match(chunk.toString('latin1'));
      if (kind !== false) {
        matched++;
        const n = (byKind.get(String(kind)) ?? 0) + 1;
        byKind.set(String(kind), n);
        if (n === 1) dropAnswer = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!dropAnswer) return void socket.write(closing(chunk));
      dropped = true;
      socket.destroy();
      upstream.destroy();
    });
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
    socket.on('close', () => upstream.destroy());
    upstream.on('close', () => socket.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    matched: () => matched,
    matchedOf: (kind: string) => byKind.get(kind) ?? 0,
    dropped: () => dropped,
    close: () => void server.close(),
  };
}

/** An answer's head says `Connection: close` (the API's server writes the head and a small body in one chunk). */
function closing(chunk: Buffer): Buffer {
  const text = chunk.toString('latin1');
  if (!text.startsWith('HTTP/1.1 ')) return chunk;
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return chunk;
  const head = text
    .slice(0, end)
    .split('\r\n')
    .filter((line) => !/^connection:|^keep-alive:/i.test(line));
  head.push('Connection: close');
  return Buffer.concat([Buffer.from(head.join('\r\n'), 'latin1'), chunk.subarray(end)]);
}
