/**
 * A TCP relay in `npm start`'s own process: where the Temporal dev server cannot listen itself. The Temporal CLI's
 * dev server bound to an address other than 127.0.0.1 or 0.0.0.0 binds its internal services there too but dials
 * them at 127.0.0.1, and fails; so it stays on loopback and this relays CONTROL_PLANE_BIND:port to it (gRPC is
 * plain HTTP/2 over TCP: each connection is piped as it is).
 */
import net from 'node:net';

export interface TcpRelay {
  close(): Promise<void>;
}

export function startTcpRelay(o: {
  host: string;
  port: number;
  to: { host: string; port: number };
}): Promise<TcpRelay> {
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(o.to.port, o.to.host);
    for (const s of [client, upstream]) {
      open.add(s);
      s.once('close', () => open.delete(s));
      s.once('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () =>
      resolve({
        close: () =>
          new Promise<void>((done) => {
            for (const s of open) s.destroy();
            server.close(() => done());
          }),
      }),
    );
  });
}
