/**
 * The CDN tier behind a real HAProxy, wired as the edge's configuration must (test/helpers/cdn-haproxy.ts):
 * HITs come through HAProxy, a client cannot name another environment's cache, other methods go straight
 * to the app, and the app sees none of the headers the tiers pass each other.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Varnish } from '../../edge/cdn/varnish';
import { cc, send } from '../helpers/cdn-answers';
import { type Origin, startOrigin, varnishDir } from '../helpers/cdn-origin';
import { type CdnHaproxy, startCdnHaproxy } from '../helpers/cdn-haproxy';
import { freePort } from '../helpers/ports';

const A = 'aaaaaaaa-0000-4000-8000-00000000000a';
const B = 'bbbbbbbb-0000-4000-8000-00000000000b';

let apps: Record<string, Origin>;
let ports: Record<string, number>;
let varnish: Varnish;
let haproxy: CdnHaproxy;
let dir: string;

/** A request to an environment's port on HAProxy, as a client sends it. */
function get(env: string, url: string, o: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  return send({ port: ports[env], path: url, method: o.method, headers: o.headers }, o.body);
}

beforeAll(async () => {
  apps = { [A]: await startOrigin(), [B]: await startOrigin() };
  ports = { [A]: await freePort(), [B]: await freePort() };
  const originPort = await freePort();
  dir = varnishDir();
  varnish = await Varnish.start({ dir, originPort, storage: '32m' });
  await varnish.resume();
  haproxy = await startCdnHaproxy({
    envs: [A, B].map((id) => ({ id, port: ports[id], appPort: apps[id].port, defaultTtl: 600 })),
    cdnPort: varnish.port,
    originPort,
  });
}, 60_000);

afterAll(async () => {
  await haproxy?.stop();
  await varnish?.close();
  for (const app of Object.values(apps ?? {})) await app.close();
  if (dir) rmSync(path.dirname(path.dirname(dir)), { recursive: true, force: true });
});

describe('Varnish behind HAProxy', () => {
  it('answers MISS then HIT through HAProxy; the app sees the client address once and no X-VC-* header', async () => {
    const url = `/page${cc('public')}`;
    const miss = await get(A, url, { headers: { host: 'a.example.test' } });
    const hit = await get(A, url, { headers: { host: 'a.example.test' } });
    expect([miss.headers['x-cache'], hit.headers['x-cache']]).toEqual(['MISS', 'HIT']);
    expect(hit.text).toBe(miss.text);
    expect(apps[A].seen).toHaveLength(1);
    const seen = apps[A].seen[0].headers;
    expect(Object.keys(seen).filter((h) => h.startsWith('x-vc-') || h === 'x-varnish' || h === 'via')).toEqual([]);
    expect(seen['x-forwarded-for']).toBe('127.0.0.1');
    expect(seen.host).toBe('a.example.test');
    expect(Object.keys(hit.headers).filter((h) => h.startsWith('x-vc-'))).toEqual([]);
  });

  it("a client cannot name another environment's cache, nor its default TTL", async () => {
    const url = `/mine${cc('public, max-age=600')}`;
    await get(A, url);
    const mine = await get(A, url);
    expect(mine.headers['x-cache']).toBe('HIT');
    const before = apps[B].seen.length;
    const forged = await get(B, url, { headers: { 'x-vc-env': A, 'x-vc-default-ttl': '99999' } });
    expect(forged.headers['x-cache']).toBe('MISS');
    expect(forged.text).not.toBe(mine.text);
    expect(apps[B].seen.length).toBe(before + 1); // B's app answered
    expect(apps[B].seen.at(-1)!.headers['x-vc-env']).toBeUndefined();
    // the default TTL is the environment's (600 s), not the client's: kept, then a HIT
    const never = `/ttl${cc('public')}`;
    await get(B, never, { headers: { 'x-vc-default-ttl': '0' } });
    expect((await get(B, never, { headers: { 'x-vc-default-ttl': '0' } })).headers['x-cache']).toBe('HIT');
  });

  it('sends other methods straight to the app, without X-Cache', async () => {
    const before = apps[A].seen.length;
    const post = await get(A, `/page${cc('public')}`, { method: 'POST', body: 'x=1' });
    expect(post.headers['x-cache']).toBeUndefined();
    expect(post.text).toContain(' POST /page ');
    expect(apps[A].seen.length).toBe(before + 1);
    expect(Object.keys(apps[A].seen.at(-1)!.headers).filter((h) => h.startsWith('x-vc-'))).toEqual([]);
  });
});
