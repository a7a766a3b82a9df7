/**
 * Real servers on loopback for repository tests: git's smart HTTP protocol through `git http-backend`
 * (CGI) behind node:http, optionally with Basic auth; a server that redirects; one that accepts a
 * connection and closes it without a word ("empty reply").
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';

export interface GitHttpServer {
  port: number;
  /** `http://127.0.0.1:PORT/<name>` (or another host name for the same server). */
  url(name: string, host?: string): string;
  /** Every request seen: path and whether (and which) Basic credentials came with it. */
  requests: Array<{ path: string; user: string | null; password: string | null }>;
  stop(): Promise<void>;
}

function listen(server: http.Server | net.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)),
  );
}

function closer(server: http.Server | net.Server): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      if (server instanceof http.Server) server.closeAllConnections();
      server.close(() => resolve());
    });
}

function basic(header: string | undefined): { user: string; password: string } | null {
  const m = /^Basic (.+)$/i.exec(header ?? '');
  if (!m) return null;
  const text = Buffer.from(m[1], 'base64').toString('utf8');
  const i = text.indexOf(':');
  return { user: text.slice(0, i), password: text.slice(i + 1) };
}

/** Serves the bare or non-bare repositories under `root` over smart HTTP; with `auth`, only to those credentials. */
export async function startGitHttpServer(
  root: string,
  auth?: { user: string; password: string },
): Promise<GitHttpServer> {
  const requests: GitHttpServer['requests'] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const given = basic(req.headers.authorization);
    requests.push({ path: url.pathname, user: given?.user ?? null, password: given?.password ?? null });
    if (auth && (given?.user !== auth.user || given?.password !== auth.password)) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' });
      return res.end('authentication required');
    }
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        REMOTE_ADDR: '127.0.0.1',
        REMOTE_USER: given?.user ?? '',
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: String(req.headers['content-encoding']) } : {}),
        ...(req.headers['git-protocol'] ? { HTTP_GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
      },
    });
    req.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let headerDone = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (headerDone) return void res.write(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      headerDone = true;
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of head.subarray(0, end).toString('utf8').split('\r\n')) {
        const i = line.indexOf(':');
        const name = line.slice(0, i).trim().toLowerCase();
        const value = line.slice(i + 1).trim();
        if (name === 'status') status = Number(value.split(' ')[0]);
        else headers[name] = value;
      }
      res.writeHead(status, headers);
      res.write(head.subarray(end + 4));
    });
    cgi.on('close', () => res.end());
    cgi.on('error', () => res.destroy());
  });
  const port = await listen(server);
  return { port, url: (name, host = '127.0.0.1') => `http://${host}:${port}/${name}`, requests, stop: closer(server) };
}

/** Answers every request with a redirect to `to` (the same path appended). */
export async function startRedirectServer(to: string): Promise<{ port: number; hits: number; stop(): Promise<void> }> {
  const state = { port: 0, hits: 0, stop: async () => undefined as void };
  const server = http.createServer((req, res) => {
    state.hits += 1;
    res.writeHead(302, { location: `${to}${req.url ?? '/'}` });
    res.end();
  });
  state.port = await listen(server);
  state.stop = closer(server);
  return state;
}

/** Accepts connections and closes them at once: curl's "Empty reply from server". */
export async function startEmptyReplyServer(): Promise<{ port: number; stop(): Promise<void> }> {
  const server = net.createServer((socket) => socket.destroy());
  const port = await listen(server);
  return { port, stop: closer(server) };
}
