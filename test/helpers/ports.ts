import { bindable } from '../../edge/haproxy/held-ports';

/** Whether `port` can be listened on at 127.0.0.1 right now. */
const free = (port: number) => bindable('127.0.0.1', port);

/**
 * A port that was free a moment ago on 127.0.0.1, below the kernel's ephemeral range (32768-60999), as every
 * port a test binds later (an EDGE_PORT, npm start's PORT): a port the kernel gave out (listen on port 0) is
 * one it gives again to any outgoing connection's local end, which then holds it when the process that was to
 * listen there starts (seen: HAProxy's `cannot bind socket` for npm start's EDGE_PORT, 20 s after it was chosen,
 * with three test workers connecting meanwhile).
 */
export async function freePort(): Promise<number> {
  return (await freePortRange(1)).from;
}

/**
 * `n` consecutive ports free a moment ago on 127.0.0.1, below the kernel's ephemeral range (where an outgoing
 * connection could take one before the edge binds it): an ENVIRONMENT_PORTS range for an edge.
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
