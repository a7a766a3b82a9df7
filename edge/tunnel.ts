/** WebSocket and other upgrades: the edge passes the connection through to one of the environment's instances. */
import type http from 'node:http';
import net from 'node:net';
import { forwardHeaders } from '../activities/provider/proxy';
import type { Upstream } from './balance';

export function tunnel(
  target: Upstream | null | undefined,
  req: http.IncomingMessage,
  socket: net.Socket,
  head: Buffer,
  sockets: Set<net.Socket>,
): void {
  if (!target) {
    socket.end(
      'HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nunavailable\n',
    );
    return;
  }
  const up = net.connect(target.port, target.host);
  sockets.add(up);
  up.on('close', () => sockets.delete(up));
  up.on('connect', () => {
    let text = `${req.method} ${req.url} HTTP/1.1\r\n`;
    for (const [name, value] of Object.entries(forwardHeaders(req, true))) {
      for (const v of Array.isArray(value) ? value : [value]) text += `${name}: ${v}\r\n`;
    }
    up.write(`${text}\r\n`);
    if (head.length) up.write(head);
    up.pipe(socket);
    socket.pipe(up);
  });
  const bail = () => {
    up.destroy();
    socket.destroy();
  };
  up.on('error', bail);
  socket.on('error', bail);
}
