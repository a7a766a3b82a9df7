import http from 'node:http';
import type net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { pipeUpgrade } from '../../../activities/provider/proxy';

const servers: http.Server[] = [];
/** Upgraded sockets: no longer the HTTP servers' to close. */
const open = new Set<net.Socket>();
afterAll(() => {
  for (const s of open) s.destroy();
  for (const s of servers) s.closeAllConnections();
  return Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

function listen(server: http.Server): Promise<number> {
  servers.push(server);
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)),
  );
}

describe('pipeUpgrade', () => {
  it('passes a WebSocket-style upgrade through: the request line and headers reach the upstream, then bytes flow both ways', async () => {
    const seen: { url?: string; upgrade?: string; head?: string } = {};
    const upstream = http.createServer();
    upstream.on('upgrade', (req, socket: net.Socket, head) => {
      seen.url = req.url;
      seen.upgrade = req.headers.upgrade;
      seen.head = head.toString();
      open.add(socket);
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n');
      socket.on('data', (d) => socket.write(`echo:${d}`));
    });
    const upPort = await listen(upstream);
    const front = http.createServer();
    const sockets = open;
    front.on('upgrade', (req, socket: net.Socket, head) => {
      open.add(socket);
      pipeUpgrade({ host: '127.0.0.1', port: upPort }, req, socket, head, sockets);
    });
    const frontPort = await listen(front);

    const reply = await new Promise<string>((resolve, reject) => {
      const req = http.request({
        host: '127.0.0.1',
        port: frontPort,
        path: '/socket?room=1',
        headers: { connection: 'Upgrade', upgrade: 'echo' },
      });
      req.on('upgrade', (res, socket) => {
        expect(res.statusCode).toBe(101);
        socket.once('data', (d) => {
          resolve(d.toString());
          socket.destroy();
        });
        socket.write('hello');
      });
      req.on('error', reject);
      req.end();
    });
    expect(reply).toBe('echo:hello');
    expect(seen).toMatchObject({ url: '/socket?room=1', upgrade: 'echo' });
  });
});
