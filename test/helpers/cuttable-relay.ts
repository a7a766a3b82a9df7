/**
 * A loopback TCP relay to a real server that a test can cut: `cut()` drops the connections it holds and from then
 * on takes new ones without ever passing a byte, as a host whose packets are dropped would (a connect succeeds at
 * the kernel, then nothing answers).
 */
import net from 'node:net';

interface CuttableRelay {
  port: number;
  cut(): void;
  /** Relays new connections again (the held ones stay unanswered, as after a host's packets flow again). */
  mend(): void;
  close(): void;
}

export async function cuttableRelay(to: { host: string; port: number }): Promise<CuttableRelay> {
  const open = new Set<net.Socket>();
  let cut = false;
  const server = net.createServer((client) => {
    open.add(client);
    client.once('close', () => open.delete(client));
    client.on('error', () => undefined);
    if (cut) return; // held, never answered
    const upstream = net.connect(to.port, to.host);
    open.add(upstream);
    upstream.once('close', () => open.delete(upstream));
    for (const s of [client, upstream])
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut() {
      cut = true;
      for (const s of open) s.destroy();
    },
    mend() {
      cut = false;
    },
    close() {
      for (const s of open) s.destroy();
      server.close();
    },
  };
}
