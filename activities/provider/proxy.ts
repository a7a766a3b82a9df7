/**
 * The reverse proxy in front of one environment's public port (node:http only). Each request asks
 * `route()` where to go at that moment, so switching releases is one assignment in the supervisor:
 * requests already under way finish against the process they started on. Bodies are streamed both ways;
 * status and headers pass through (hop-by-hop headers dropped); WebSocket upgrades are piped.
 */
import http from 'node:http';
import net from 'node:net';

export type Route =
  | { kind: 'upstream'; host: string; port: number; agent: http.Agent }
  | { kind: 'unavailable'; text: string };

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

export interface Proxy {
  port: number;
  close(): Promise<void>;
}

/** Listens on host:port; rejects (EADDRINUSE and the like) when the port cannot be had. */
export async function startProxy(host: string, port: number, route: () => Route): Promise<Proxy> {
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => handle(req, res, route()));
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('upgrade', (req, socket, head) => upgrade(req, socket as net.Socket, head, route(), sockets));
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
  });
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        for (const s of sockets) s.destroy();
      }),
  };
}

function plain(res: http.ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
  res.end(`${text}\n`);
}

export function forwardHeaders(req: http.IncomingMessage, keepUpgrade = false): http.OutgoingHttpHeaders {
  const headers: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    if (HOP_BY_HOP.has(name) && !(keepUpgrade && (name === 'connection' || name === 'upgrade'))) continue;
    headers[name] = value;
  }
  const from = req.socket.remoteAddress ?? '';
  const prior = req.headers['x-forwarded-for'];
  headers['x-forwarded-for'] = prior ? `${prior}, ${from}` : from;
  headers['x-forwarded-proto'] = (req.headers['x-forwarded-proto'] as string | undefined) ?? 'http';
  if (req.headers.host) headers['x-forwarded-host'] = req.headers.host;
  return headers;
}

export function responseHeaders(raw: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (!HOP_BY_HOP.has(raw[i].toLowerCase())) out.push(raw[i], raw[i + 1]);
  }
  return out;
}

/** Requests under way per upstream (its agent): an instance leaving the route is stopped once it has none. */
const underWay = new WeakMap<http.Agent, number>();

/** How many requests this proxy has under way at the upstream of `agent` (answers not yet sent in full). */
export function requestsUnderWay(agent: http.Agent): number {
  return underWay.get(agent) ?? 0;
}

function handle(req: http.IncomingMessage, res: http.ServerResponse, route: Route): void {
  if (route.kind === 'unavailable') {
    req.resume();
    return plain(res, 503, route.text);
  }
  const agent = route.agent;
  underWay.set(agent, requestsUnderWay(agent) + 1);
  res.once('close', () => underWay.set(agent, requestsUnderWay(agent) - 1));
  const upstream = http.request({
    host: route.host,
    port: route.port,
    method: req.method,
    path: req.url,
    headers: forwardHeaders(req),
    agent: route.agent,
  });
  upstream.on('response', (up) => {
    res.writeHead(up.statusCode ?? 502, up.statusMessage, responseHeaders(up.rawHeaders));
    up.pipe(res);
    up.on('error', () => res.destroy());
  });
  upstream.on('error', () => {
    if (!res.headersSent) plain(res, 502, 'bad gateway: the web process is not answering');
    else res.destroy();
  });
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}

function upgrade(
  req: http.IncomingMessage,
  socket: net.Socket,
  head: Buffer,
  route: Route,
  sockets: Set<net.Socket>,
): void {
  if (route.kind === 'unavailable') {
    socket.end(
      `HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n${route.text}\n`,
    );
    return;
  }
  pipeUpgrade({ host: route.host, port: route.port }, req, socket, head, sockets);
}

/** Passes an upgrade (WebSocket...) through to the upstream: the request line and headers, then both ways. */
export function pipeUpgrade(
  target: { host: string; port: number },
  req: http.IncomingMessage,
  socket: net.Socket,
  head: Buffer,
  sockets: Set<net.Socket>,
): void {
  const up = net.connect(target.port, target.host);
  sockets.add(up);
  up.on('close', () => sockets.delete(up));
  up.on('connect', () => {
    const headers = forwardHeaders(req, true);
    let text = `${req.method} ${req.url} HTTP/1.1\r\n`;
    for (const [name, value] of Object.entries(headers)) {
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
