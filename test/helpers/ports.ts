import { createServer } from 'node:net';

/** A port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/**
 * `n` consecutive ports free a moment ago on 127.0.0.1, below the kernel's ephemeral range (where an outgoing
 * connection could take one before the edge binds it): an ENVIRONMENT_PORTS range for an edge.
 */
export async function freePortRange(n: number): Promise<{ from: number; to: number }> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(true)));
    });
  for (let i = 0; i < 200; i++) {
    const from = 10_000 + Math.floor(Math.random() * (19_999 - 10_000 - n));
    let ok = true;
    for (let p = from; p < from + n && ok; p++) ok = await free(p);
    if (ok) return { from, to: from + n - 1 };
  }
  throw new Error(`no ${n} consecutive free ports in 10000-19999`);
}
