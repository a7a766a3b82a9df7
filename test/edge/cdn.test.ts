/**
 * The CDN (CONTRACT "The edge") on the real edge: GET /environments/{id}/cdn, PATCH it, and the answers of
 * HAProxy with Varnish behind it (test/helpers/cdn-world.ts) in front of a real deployed app: MISS, HIT,
 * Age, what is kept and for how long, Vary, the edge's rules before a HIT, compression of a HIT.
 * Clears: cdn-clear.test.ts.
 */
import http from 'node:http';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  cc,
  expectKeptForTheirMaxAge,
  expectMissThenHit,
  expectNeverKept,
  expectOneEntryPerEncoding,
  twice as twiceWith,
} from '../helpers/cdn-answers';
import { patchCdn, request, useCdnWorld } from '../helpers/cdn-world';

const c = useCdnWorld();
const get = (url: string, opts: Parameters<typeof request>[2] = {}) => request(c.w.environment.port, url, opts);
const twice = (url: string) => twiceWith(get, url);

describe('GET, PATCH /environments/{id}/cdn', () => {
  it('is off by default: nothing is cached and answers carry no X-Cache', async () => {
    expect((await c.owner.get(`/environments/${c.w.environment.id}/cdn`)).body).toEqual({
      enabled: false,
      default_ttl_seconds: 3600,
    });
    const [a, b] = await twice(`/off${cc('public, max-age=600')}`);
    expect(a.status).toBe(200);
    expect(a.headers['x-cache']).toBeUndefined();
    expect(b.headers['x-cache']).toBeUndefined();
    expect(b.text).not.toBe(a.text);
  });

  it('refuses a bad TTL with 422 naming the field, and keeps nothing', async () => {
    for (const bad of [0, -5, 1.5, 'x', 31_536_001]) {
      const res = await patchCdn(c, { enabled: true, default_ttl_seconds: bad });
      expect(res.status, JSON.stringify(bad)).toBe(422);
      expect(Object.keys(res.body.error.fields)).toEqual(['default_ttl_seconds']);
    }
    expect((await patchCdn(c, { enabled: 'yes' })).body.error.fields).toHaveProperty('enabled');
    expect((await patchCdn(c, {})).status).toBe(422);
    expect((await c.owner.get(`/environments/${c.w.environment.id}/cdn`)).body).toEqual({
      enabled: false,
      default_ttl_seconds: 3600,
    });
    expect((await get(`/refused${cc('public')}`)).headers['x-cache']).toBeUndefined();
    expect(await c.t.deps.knex('environment_cdns').where({ environment_id: c.w.environment.id })).toEqual([]);
  });

  it('turns on with an activity event; a viewer may read but not change it', async () => {
    const res = await patchCdn(c, { enabled: true, default_ttl_seconds: 2 });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ enabled: true, default_ttl_seconds: 2 });
    expect((await c.w.viewerApi.get(`/environments/${c.w.environment.id}/cdn`)).status).not.toBe(404);
    const events = await c.t.deps
      .knex('activity_events')
      .where({ environment_id: c.w.environment.id, type: 'cdn_changed' });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ kind: 'configuration', user_id: c.w.owner.id });
    expect(events[0].summary).toContain('enabled the CDN');
  });
});

describe('the edge with the CDN on', () => {
  it('answers MISS, then HIT with the same body, an Age and the app headers; HEAD comes from the GET entry', async () => {
    const url = `/page${cc('public, max-age=600')}`;
    const [miss] = await expectMissThenHit(get, url);
    const head = await get(url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers['x-cache']).toBe('HIT');
    expect(head.text).toBe('');
    expect(Number(head.headers['content-length'])).toBe(Buffer.byteLength(miss.text));
    // another query is another entry
    const other = await get(`${url}&page=2`);
    expect(other.headers['x-cache']).toBe('MISS');
    expect(other.text).not.toBe(miss.text);
  });

  it('a HEAD that misses goes to the app and stores nothing', async () => {
    const url = `/head-first${cc('public, max-age=600')}`;
    const head = await get(url, { method: 'HEAD' });
    expect(head.headers['x-cache']).toBe('MISS');
    const [a, b] = await twice(url);
    expect([a.headers['x-cache'], b.headers['x-cache']]).toEqual(['MISS', 'HIT']);
    expect(a.text).toMatch(/^GET \/head-first #/);
  });

  it('never keeps private, no-store, no-cache, Set-Cookie, or answers without public', async () => {
    await expectNeverKept(get);
  });

  it('keeps an answer for its max-age, s-maxage first, else the default TTL', async () => {
    await expectKeptForTheirMaxAge(get); // the default TTL: 2 s (set above)
  });

  it('keeps one entry per Accept-Encoding when the answer varies on it', async () => {
    await expectOneEntryPerEncoding(get);
  });

  it("applies the edge's rules before an answer comes from the cache", async () => {
    const url = `/guarded${cc('public, max-age=600')}`;
    const [, hit] = await twice(url);
    expect(hit.headers['x-cache']).toBe('HIT');
    const edge = await c.owner.patch(`/environments/${c.w.environment.id}/edge`, { allowed_addresses: ['127.0.0.9'] });
    expect(edge.status, edge.text).toBe(200);
    await c.t.edge!.reload();
    expect((await get(url)).status).toBe(403);
    expect((await get(url, { localAddress: '127.0.0.9' })).headers['x-cache']).toBe('HIT');
    await c.owner.patch(`/projects/${c.w.project.id}/edge`, { blocked_user_agents: ['badbot'] });
    await c.t.edge!.reload();
    expect((await get(url, { localAddress: '127.0.0.9', headers: { 'user-agent': 'BadBot/1' } })).status).toBe(403);
    await c.owner.patch(`/projects/${c.w.project.id}/edge`, { blocked_user_agents: [] });
    await c.owner.patch(`/environments/${c.w.environment.id}/edge`, { allowed_addresses: [] });
    await c.t.edge!.reload();
    expect((await get(url)).headers['x-cache']).toBe('HIT');
  });
});

describe('the CDN with compression on', () => {
  it('serves a HIT compressed as the client accepts it, from the same entry', async () => {
    const edgeUrl = `/projects/${c.w.project.id}/edge`;
    expect((await c.owner.patch(edgeUrl, { compression: true })).status).toBe(200);
    await c.t.edge!.reload();
    const url = `/zipped${cc('public, max-age=600')}`;
    const plainText = await get(url);
    expect(plainText.headers['x-cache']).toBe('MISS');
    const zipped = await new Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      http
        .get(
          {
            host: '127.0.0.1',
            port: c.w.environment.port,
            path: url,
            headers: { 'accept-encoding': 'gzip' },
            agent: false,
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c) => chunks.push(c));
            res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
          },
        )
        .on('error', reject);
    });
    expect(zipped.headers['x-cache']).toBe('HIT');
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zlib.gunzipSync(zipped.body).toString()).toBe(plainText.text);
    await c.owner.patch(edgeUrl, { compression: false });
    await c.t.edge!.reload();
  });
});
