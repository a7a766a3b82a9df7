import { bindable } from '../../edge/haproxy/held-ports';
import { workerIndex } from './test-workers';

/** Whether `port` can be listened on at 127.0.0.1 right now. */
const free = (port: number) => bindable('127.0.0.1', port);

/** The ports a vitest worker hands its files: 3000-9999, those whose last two digits are its index (test-workers.ts). */
const LOW = 3_000;
const HIGH = 9_999;
const STRIDE = 100;

/**
 * Ports this process (a vitest worker: its files run one after another, isolate off) handed out, and when: one is not
 * handed again for a minute, the time a test takes to start what binds it.
 */
const handedOut = new Map<number, number>();
const AGAIN_AFTER_MS = 60_000;
let cursor = -1;

const recent = (port: number) => Date.now() - (handedOut.get(port) ?? 0) < AGAIN_AFTER_MS;

/** The ports of the share that fetch refuses to reach ("bad port", the Fetch standard's port blocking). */
const FETCH_BLOCKED = new Set([3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697]);

/** The next port of this worker's share not handed out lately, claimed at once (calls side by side get different ones). */
function nextOfShare(index: number): number | null {
  const count = Math.floor((HIGH - LOW - index) / STRIDE) + 1;
  if (cursor < 0) cursor = Math.floor(Math.random() * count);
  for (let i = 0; i < count; i++) {
    cursor = (cursor + 1) % count;
    const port = LOW + index + cursor * STRIDE;
    if (!recent(port) && !FETCH_BLOCKED.has(port)) {
      handedOut.set(port, Date.now());
      return port;
    }
  }
  return null;
}

/**
 * A port free a moment ago on 127.0.0.1, for a program a test starts later (npm start's PORT and EDGE_PORT, a
 * Temporal dev server, an SMTP or DNS server, ...), with `port + 1000` free too where `plusThousand` (the Temporal
 * dev server's Web UI).
 *
 * In a vitest worker (VITEST_POOL_ID) it comes from the worker's own share of 3000-9999 (every port whose last two
 * digits are the worker's index among every slot's workers, test-workers.ts), not handed out again for a minute: a
 * port is only free until something binds it, and between the look and the bind (npm start takes seconds) another
 * worker's file, or an edge picking its own listeners (edge/listen-ports.ts, 10000-19999), could take it. Shares
 * never meet, and nothing of the product picks a port there. `port + 1000` is of the same share.
 *
 * Elsewhere (the bench, global setup: nothing runs beside them) it is any port of 10000-19999, below the kernel's
 * ephemeral range (32768-60999), whose ports the kernel gives any outgoing connection as its local end.
 */
export async function freePort(o: { plusThousand?: boolean } = {}): Promise<number> {
  const pool = Number(process.env.VITEST_POOL_ID);
  if (!pool) {
    for (;;) {
      const { from } = await freePortRange(1);
      if (!o.plusThousand || (await free(from + 1000))) return from;
    }
  }
  const index = workerIndex(pool);
  for (;;) {
    const port = nextOfShare(index);
    if (port === null)
      throw new Error(
        `every port of this vitest worker's share (${LOW}-${HIGH}, index ${index}) was handed out lately`,
      );
    if (o.plusThousand && (port + 1000 > HIGH || recent(port + 1000) || FETCH_BLOCKED.has(port + 1000))) continue;
    if (!(await free(port))) continue;
    if (o.plusThousand) {
      if (!(await free(port + 1000))) continue;
      handedOut.set(port + 1000, Date.now());
    }
    return port;
  }
}

/**
 * `n` consecutive ports free a moment ago on 127.0.0.1, below the kernel's ephemeral range (where an outgoing
 * connection could take one before the edge binds it): an ENVIRONMENT_PORTS range for an edge of the bench.
 */
export async function freePortRange(n: number): Promise<{ from: number; to: number }> {
  for (let i = 0; i < 200; i++) {
    const from = 10_000 + Math.floor(Math.random() * (19_999 - 10_000 - n));
    let ok = true;
    for (let p = from; p < from + n && ok; p++) ok = await free(p);
    if (ok) return { from, to: from + n - 1 };
  }
  throw new Error(`no ${n} consecutive free ports in 10000-19999`);
}
