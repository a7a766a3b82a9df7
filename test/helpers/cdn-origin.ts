/**
 * For the Varnish tests: a real origin standing in for HAProxy's internal origin listener (it answers per
 * X-VC-Env, Host and URL: `?cc=` sets Cache-Control, `?cookie=1` a Set-Cookie, `?vary=` a Vary, `?status=`
 * the status; each body counts the requests it has seen, so a HIT shows the MISS's body), and a client
 * that speaks to Varnish as HAProxy does (X-VC-Env, X-VC-Default-TTL, Host kept).
 */
import http from 'node:http';
import { mkdtempSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Answer, send } from './cdn-answers';
import { freePort } from './ports';

export { cc, sleep } from './cdn-answers';

export interface Origin {
  port: number;
  /** The requests it got, newest last (method, url and headers). */
  seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders }>;
  close(): Promise<void>;
}

export async function startOrigin(): Promise<Origin> {
  let n = 0;
  const seen: Origin['seen'] = [];
  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://origin');
    n += 1;
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    const headers: Record<string, string> = { 'content-type': 'text/plain' };
    if (u.searchParams.get('cc')) headers['cache-control'] = u.searchParams.get('cc')!;
    if (u.searchParams.get('cookie')) headers['set-cookie'] = 'session=abc; Path=/';
    if (u.searchParams.get('vary')) headers.vary = u.searchParams.get('vary')!;
    if (u.searchParams.get('leak')) headers['x-vc-env'] = 'leaked';
    res.writeHead(Number(u.searchParams.get('status') ?? 200), headers);
    res.end(
      `${req.headers['x-vc-env']} ${req.headers.host} ${req.method} ${u.pathname} #${n} ${req.headers['accept-encoding'] ?? '-'}`,
    );
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  return {
    port,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A request to Varnish as HAProxy sends it. */
export function viaCdn(
  port: number,
  url: string,
  o: { env: string; host?: string; ttl?: number; method?: string; headers?: Record<string, string>; body?: string },
): Promise<Answer> {
  const headers = {
    host: o.host ?? 'app.example.test',
    'x-vc-env': o.env,
    'x-vc-default-ttl': String(o.ttl ?? 3600),
    'x-forwarded-for': '203.0.113.7',
    ...o.headers,
  };
  return send({ port, path: url, method: o.method, headers }, o.body);
}

/** A directory for a Varnish of its own, traversable like DATA_DIR (varnishd's jail user reaches it). */
export function varnishDir(root = tmpdir()): string {
  const dir = mkdtempSync(path.join(root, 'vc-varnish-'));
  chmodSync(dir, 0o711);
  return path.join(dir, 'edge', 'varnish');
}
