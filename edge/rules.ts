/** The project edge's checks, kept apart from the forwarding (edge/server.ts). */
import { createHash } from 'node:crypto';
import type http from 'node:http';
import Negotiator from 'negotiator';
import zlib from 'node:zlib';
import type { Transform } from 'node:stream';
import { verifyPassword } from '../api/lib/passwords';

/** The client address: the socket's, or with trusted proxies the one they report (X-Forwarded-For). */
export function clientAddress(req: http.IncomingMessage, trustProxyHops: number): string | undefined {
  const socket = req.socket.remoteAddress;
  if (trustProxyHops <= 0) return socket;
  const chain = String(req.headers['x-forwarded-for'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return chain.length >= trustProxyHops ? chain[chain.length - trustProxyHops] : socket;
}

/** HTTPS: the edge has no TLS of its own, so only a trusted proxy's X-Forwarded-Proto says so. */
export function isHttps(req: http.IncomingMessage, trustProxyHops: number): boolean {
  if (trustProxyHops <= 0) return false;
  const proto = String(req.headers['x-forwarded-proto'] ?? '')
    .split(',')
    .map((s) => s.trim());
  return proto[proto.length - 1]?.toLowerCase() === 'https';
}

export function blockedAgent(userAgent: string | undefined, agents: string[]): boolean {
  if (agents.length === 0) return false;
  const ua = (userAgent ?? '').toLowerCase();
  return agents.some((a) => ua.includes(a));
}

/** Fixed windows per key: `requests` answers in each `per_seconds` window, then the seconds until it ends. */
export class RateWindows {
  private readonly windows = new Map<string, { start: number; count: number }>();

  hit(key: string, limit: { requests: number; per_seconds: number }, now = Date.now()): number | null {
    const span = limit.per_seconds * 1000;
    let w = this.windows.get(key);
    if (!w || now - w.start >= span) {
      if (this.windows.size > 100_000) this.prune(now, span);
      w = { start: now, count: 0 };
      this.windows.set(key, w);
    }
    w.count += 1;
    return w.count > limit.requests ? Math.max(1, Math.ceil((w.start + span - now) / 1000)) : null;
  }

  private prune(now: number, span: number): void {
    for (const [k, w] of this.windows) if (now - w.start >= span) this.windows.delete(k);
  }
}

export function hstsValue(h: { max_age: number; include_subdomains: boolean; preload: boolean }): string {
  return `max-age=${h.max_age}${h.include_subdomains ? '; includeSubDomains' : ''}${h.preload ? '; preload' : ''}`;
}

const TEXT = /^(text\/|application\/(json|javascript|xml|xhtml\+xml|rss\+xml|atom\+xml|ld\+json)|image\/svg\+xml)/i;

/** A compressor for a text answer the client accepts compressed (br preferred), or null. */
export function compressorFor(
  req: http.IncomingMessage,
  status: number,
  headers: http.IncomingHttpHeaders,
): { encoding: string; stream: Transform } | null {
  if (req.method === 'HEAD' || status < 200 || status === 204 || status === 304) return null;
  if (headers['content-encoding'] || !TEXT.test(String(headers['content-type'] ?? ''))) return null;
  const encoding = new Negotiator(req).encoding(['br', 'gzip']);
  if (encoding === 'br')
    return { encoding, stream: zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } }) };
  if (encoding === 'gzip') return { encoding, stream: zlib.createGzip() };
  return null;
}

/** Basic credentials checked against the argon2id hash; a match is remembered (by digest) so the hash runs once. */
export function passwordChecker() {
  const goodCredentials = new Map<string, string>();
  return async function passwordOk(
    envId: string,
    req: http.IncomingMessage,
    want: { username: string; hash: string },
  ): Promise<boolean> {
    const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(req.headers.authorization ?? '');
    if (!m) return false;
    const decoded = Buffer.from(m[1], 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    if (i < 0 || decoded.slice(0, i) !== want.username) return false;
    const key = createHash('sha256').update(`${envId}\0${decoded}`).digest('hex');
    if (goodCredentials.get(key) === want.hash) return true;
    if (!(await verifyPassword(want.hash, decoded.slice(i + 1)))) return false;
    if (goodCredentials.size > 10_000) goodCredentials.clear();
    goodCredentials.set(key, want.hash);
    return true;
  };
}
