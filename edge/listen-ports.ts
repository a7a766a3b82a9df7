/**
 * Ports the edge picks for its own listeners (HAProxy's CDN origin, Varnish's HTTP and admin ports, and the
 * edge port when none is configured).
 *
 * A port found free by listening on port 0 comes from the kernel's ephemeral range, where every outgoing
 * connection also takes its local port. Between the look and the listener's bind, a connection (or another
 * process's port-0 listener) can take it, and HAProxy, which binds without SO_REUSEPORT, then exits with
 * "Address already in use". So these ports come from below that range: 10000-19999, under the default
 * ENVIRONMENT_PORTS (20000-20999), each tried before it is handed out.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';

const LOW = 10_000;
const HIGH = 19_999;

function ephemeralLow(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    return Number.isInteger(low) && low > 1024 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

function tryListen(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen({ port, host, exclusive: true }, () => s.close(() => resolve(true)));
  });
}

/**
 * A port free a moment ago on `host`, outside the kernel's ephemeral range and outside `avoid` (ENVIRONMENT_PORTS,
 * which the edge listens on whole).
 */
export async function freeListenPort(
  host = '127.0.0.1',
  avoid: { from: number; to: number } | null = null,
): Promise<number> {
  const high = Math.min(HIGH, ephemeralLow() - 1);
  // what is left of LOW-high once `avoid` is taken out: at most two spans
  const spans = (
    avoid
      ? [
          [LOW, Math.min(high, avoid.from - 1)],
          [Math.max(LOW, avoid.to + 1), high],
        ]
      : [[LOW, high]]
  ).filter(([a, b]) => a <= b);
  const size = spans.reduce((n, [a, b]) => n + b - a + 1, 0);
  for (let i = 0; i < 200 && size > 0; i++) {
    let k = Math.floor(Math.random() * size);
    let port = 0;
    for (const [a, b] of spans) {
      if (k <= b - a) {
        port = a + k;
        break;
      }
      k -= b - a + 1;
    }
    if (await tryListen(port, host)) return port;
  }
  throw new Error(`no free port in ${LOW}-${high} on ${host}: free some, or set the edge's ports explicitly`);
}

/**
 * The port that HAProxy or varnishd could not listen on because another program held it, from the error of a
 * failed start; null for any other failure. A port the edge picked itself (freeListenPort) can be taken between
 * the look and the bind: the start is then tried again with a new pick (server.ts).
 */
export function takenPortOf(message: string): number | null {
  const m =
    // HAProxy: "cannot bind socket (Address already in use) for [127.0.0.1:17237]"
    /cannot bind socket \(Address already in use\) for \[[^\]]*:(\d+)\]/.exec(message) ??
    // varnishd -a: "Could not get socket 127.0.0.1:17001: Address already in use"
    /Could not get socket \S*:(\d+): Address already in use/.exec(message) ??
    // varnishd -a again, when its manager opens the listener anew for a child it starts after one stopped (a CI run
    // saw it at an edge's start under load): "Could not reopen listen socket 127.0.0.1:10125: Address already in use"
    /Could not reopen listen socket \S*:(\d+): Address already in use/.exec(message) ??
    // varnishd -T: "-T 127.0.0.1:17002 could not be listened on."
    /-T \S*:(\d+) could not be listened on/.exec(message);
  return m ? Number(m[1]) : null;
}
