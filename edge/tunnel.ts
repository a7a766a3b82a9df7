/** WebSocket and other upgrades: the edge passes the connection through to one of the environment's instances. */
import type http from 'node:http';
import type net from 'node:net';
import { pipeUpgrade } from '../activities/provider/proxy';
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
  pipeUpgrade(target, req, socket, head, sockets);
}
