/**
 * A cache tier's answers as the CDN tests read them, and the cases both tiers' tests make of them: Varnish
 * alone in front of a test origin (test/edge/varnish.test.ts, cdn-origin.ts) and the whole edge in front of
 * a deployed app (test/edge/cdn.test.ts, cdn-world.ts). Both apps set Cache-Control from `?cc=` and Vary
 * from `?vary=`, and end every body with a count of the requests they have seen and the Accept-Encoding they
 * got: a HIT shows the same body as the MISS before it, a MISS a new one.
 */
import http from 'node:http';
import { expect } from 'vitest';

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

export const cc = (value: string, more = '') => `?cc=${encodeURIComponent(value)}${more}`;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One request on a connection of its own to 127.0.0.1 (GET unless `options` says), read whole. */
export function send(options: http.RequestOptions, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', agent: false, ...options, method: options.method ?? 'GET' },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** How a test asks its tier for a URL. */
type Get<O = { method?: string; headers?: Record<string, string> }> = (url: string, o?: O) => Promise<Answer>;

/** The same request twice: both answers. */
export async function twice<O>(get: Get<O>, url: string, o?: O): Promise<[Answer, Answer]> {
  const first = await get(url, o);
  return [first, await get(url, o)];
}

/**
 * `url` (which asks for a public Cache-Control with a max-age) twice: a MISS, then a HIT with the same body,
 * an Age and the app's headers. Both answers.
 */
export async function expectMissThenHit(get: Get, url: string): Promise<[Answer, Answer]> {
  const [miss, hit] = await twice(get, url);
  expect(miss.headers['x-cache']).toBe('MISS');
  expect(hit.headers['x-cache']).toBe('HIT');
  expect(hit.text).toBe(miss.text);
  expect(hit.headers['cache-control']).toBe(new URL(url, 'http://app').searchParams.get('cc'));
  expect(hit.headers['content-type']).toBe('text/plain');
  expect(Number(hit.headers['content-length'])).toBe(Buffer.byteLength(miss.text));
  expect(Number(hit.headers.age)).toBeGreaterThanOrEqual(0);
  return [miss, hit];
}

/**
 * Answers no tier keeps (private, no-store, no-cache, Set-Cookie, no public, max-age=0), then `more`, each
 * twice: two MISSes with bodies of their own.
 */
export async function expectNeverKept(get: Get, more: string[] = []): Promise<void> {
  for (const url of [
    `/p1${cc('private, max-age=600')}`,
    `/p2${cc('public, private, max-age=600')}`,
    `/p3${cc('public, no-store')}`,
    `/p4${cc('public, no-cache')}`,
    `/p5${cc('public, max-age=600', '&cookie=1')}`,
    `/p6${cc('max-age=600')}`,
    '/p7',
    `/p8${cc('public, max-age=0')}`,
    ...more,
  ]) {
    const [a, b] = await twice(get, url);
    expect([a.headers['x-cache'], b.headers['x-cache']], url).toEqual(['MISS', 'MISS']);
    expect(b.text, url).not.toBe(a.text);
  }
}

/**
 * An answer is kept for its max-age, s-maxage first, else for the default TTL, which must be 2 s for the
 * answers `getFallback` asks for; never served stale.
 */
export async function expectKeptForTheirMaxAge(get: Get, getFallback: Get = get): Promise<void> {
  const short = `/short${cc('public, max-age=1')}`;
  const shared = `/shared${cc('public, max-age=1, s-maxage=600')}`;
  const fallback = `/fallback${cc('public')}`;
  const first = { short: await get(short), shared: await get(shared), fallback: await getFallback(fallback) };
  expect((await get(short)).text).toBe(first.short.text);
  expect((await getFallback(fallback)).text).toBe(first.fallback.text);
  await sleep(1300);
  const s2 = await get(short);
  expect(s2.headers['x-cache']).toBe('MISS');
  expect(s2.text).not.toBe(first.short.text);
  const sh2 = await get(shared);
  expect(sh2.headers['x-cache']).toBe('HIT');
  expect(sh2.text).toBe(first.shared.text);
  expect((await getFallback(fallback)).headers['x-cache']).toBe('HIT');
  await sleep(1000);
  const f3 = await getFallback(fallback);
  expect(f3.headers['x-cache']).toBe('MISS');
  expect(f3.text).not.toBe(first.fallback.text);
}

/** An answer that varies on Accept-Encoding: one entry per Accept-Encoding, which reaches the app as sent. */
export async function expectOneEntryPerEncoding(get: Get): Promise<void> {
  const url = `/varied${cc('public, max-age=600', '&vary=Accept-Encoding')}`;
  const gzip = await get(url, { headers: { 'accept-encoding': 'gzip' } });
  const none = await get(url, { headers: { 'accept-encoding': 'identity' } });
  expect([gzip.headers['x-cache'], none.headers['x-cache']]).toEqual(['MISS', 'MISS']);
  expect(gzip.text).toMatch(/ gzip$/);
  expect(none.text).toMatch(/ identity$/);
  const again = await get(url, { headers: { 'accept-encoding': 'gzip' } });
  expect(again.headers['x-cache']).toBe('HIT');
  expect(again.text).toBe(gzip.text);
  const none2 = await get(url, { headers: { 'accept-encoding': 'identity' } });
  expect(none2.headers['x-cache']).toBe('HIT');
  expect(none2.text).toBe(none.text);
}
