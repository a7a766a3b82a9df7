/**
 * A real HAProxy on loopback run from a configuration the test builds (from the fragments under test), in
 * master-worker mode with an admin socket and a master socket, in the foreground (-db); stopped by its pid.
 * Plus a tiny real app (node:http) that answers `app <path>` for the configuration to proxy to.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runtimeAnswers, spawnHaproxy } from './haproxy';
import { freePort } from './ports';

export interface ConfiguredHaproxy {
  port: number;
  dir: string;
  socket: string;
  master: string;
  pid: number;
  output(): string;
  stop(): Promise<void>;
}

interface ConfigInput {
  port: number;
  socket: string;
  dir: string;
}

/**
 * `build` returns haproxy.cfg; `o.files` are more -f files (written already), `o.socket` the admin socket's
 * path when the test needs it before HAProxy starts.
 */
export async function startConfiguredHaproxy(
  build: (o: ConfigInput) => string,
  o: { files?: string[]; socket?: string } = {},
): Promise<ConfiguredHaproxy> {
  const dir = mkdtempSync(join(tmpdir(), 'vc-haproxy-'));
  const socket = o.socket ?? join(dir, 'admin.sock');
  const master = join(dir, 'master.sock');
  const port = await freePort();
  const cfg = join(dir, 'haproxy.cfg');
  writeFileSync(cfg, build({ port, socket, dir }));
  const args = ['-W', '-db', '-S', master, '-f', cfg];
  for (const path of o.files ?? []) args.push('-f', path);
  const child = await spawnHaproxy(args, () => runtimeAnswers(socket));
  return {
    port,
    dir,
    socket,
    master,
    pid: child.pid,
    output: child.output,
    async stop() {
      await child.stop();
      rmSync(dir, { recursive: true, force: true });
      rmSync(socket, { force: true });
    },
  };
}

export const DEFAULTS = [
  'defaults',
  '  mode http',
  '  timeout client 30s',
  '  timeout server 30s',
  '  timeout connect 5s',
  '  timeout http-keep-alive 30s',
  '',
];

/** A tiny app on 127.0.0.1: `app <path>`, 200. */
export async function startTinyApp(): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`app ${req.url}`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** One request (own connection) from a given loopback address. */
export function request(
  port: number,
  o: { host?: string; path?: string; from?: string; headers?: Record<string, string>; method?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: o.method ?? 'GET',
        path: o.path ?? '/',
        localAddress: o.from ?? '127.0.0.1',
        headers: { ...(o.host ? { host: o.host } : {}), ...o.headers },
        agent: false,
      },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

export const basic = (user: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});
