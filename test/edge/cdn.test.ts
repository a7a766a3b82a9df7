/**
 * The CDN (CONTRACT "The edge"): GET /environments/{id}/cdn, PATCH it, POST .../cdn/clear, and the edge's
 * cache in front of a real deployed app whose answers say how they may be cached (`?cc=` sets
 * Cache-Control, `?cookie=1` a Set-Cookie, `?vary=` a Vary); every answer's body counts the requests the
 * app has seen, so a HIT shows the same body as the MISS before it and a MISS a new one.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createDeployWorld, taskLog, waitForTask } from '../helpers/deploy-fixtures';
import { spawnSystemProcess, stopChildren } from '../helpers/processes';
import { sessionAgent } from '../helpers/fixtures';
import { startEdge } from '../../edge/server';
import type { Agent } from '../helpers/http';

const APP = `
const http = require('node:http');
let n = 0;
http.createServer((req, res) => {
  if (req.url === '/healthz') { res.writeHead(200); return res.end('ok'); }
  const u = new URL(req.url, 'http://app');
  n += 1;
  const headers = { 'content-type': 'text/plain' };
  if (u.searchParams.get('cc')) headers['cache-control'] = u.searchParams.get('cc');
  if (u.searchParams.get('cookie')) headers['set-cookie'] = 'session=abc; Path=/';
  if (u.searchParams.get('vary')) headers.vary = u.searchParams.get('vary');
  res.writeHead(200, headers);
  res.end(req.method + ' ' + u.pathname + ' #' + n + ' ' + (req.headers['accept-encoding'] || '-'));
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

const t = useTestContext({ edge: true });
const children: ChildProcess[] = [];
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let owner: Agent;
let developer: Agent;

beforeAll(async () => {
  w = await createDeployWorld(t);
  writeFileSync(path.join(w.repo.dir, 'server.js'), APP);
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qam', 'cdn app'], {
    cwd: w.repo.dir,
  });
  children.push(spawnSystemProcess(t, 'system/worker.ts'));
  const res = await w.api.post(`/environments/${w.environment.id}/deploy`);
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, w.api, res.body.id, { timeoutMs: 90_000 });
  expect(task.status, task.error ?? '').toBe('succeeded');
  owner = await sessionAgent(t, w.owner);
  developer = await sessionAgent(t, w.developer);
}, 120_000);
afterAll(() => stopChildren(children));

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** A request to the environment's port (from a loopback address of choice). */
function get(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; localAddress?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: w.environment.port,
        path: url,
        method: opts.method ?? 'GET',
        headers: opts.headers,
        localAddress: opts.localAddress,
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

const cc = (value: string, more = '') => `?cc=${encodeURIComponent(value)}${more}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > deadline) return v;
    await sleep(50);
  }
}

/** Twice the same request: what the second one shows. */
async function twice(url: string, headers: Record<string, string> = {}): Promise<[Answer, Answer]> {
  const first = await get(url, { headers });
  return [first, await get(url, { headers })];
}

async function patchCdn(body: unknown) {
  const res = await owner.patch(`/environments/${w.environment.id}/cdn`, body);
  await t.edge!.reload(); // the edge reads the setting now, whether or not the notification arrived yet
  return res;
}

async function clear(body: unknown) {
  const res = await developer.post(`/environments/${w.environment.id}/cdn/clear`, body);
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, w.api, res.body.id, { timeoutMs: 60_000 });
  expect(task.status, task.error ?? '').toBe('succeeded');
  return res.body;
}

describe('GET, PATCH /environments/{id}/cdn', () => {
  it('is off by default: nothing is cached and answers carry no X-Cache', async () => {
    expect((await owner.get(`/environments/${w.environment.id}/cdn`)).body).toEqual({
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
      const res = await patchCdn({ enabled: true, default_ttl_seconds: bad });
      expect(res.status, JSON.stringify(bad)).toBe(422);
      expect(Object.keys(res.body.error.fields)).toEqual(['default_ttl_seconds']);
    }
    expect((await patchCdn({ enabled: 'yes' })).body.error.fields).toHaveProperty('enabled');
    expect((await patchCdn({})).status).toBe(422);
    expect((await owner.get(`/environments/${w.environment.id}/cdn`)).body).toEqual({
      enabled: false,
      default_ttl_seconds: 3600,
    });
    expect((await get(`/refused${cc('public')}`)).headers['x-cache']).toBeUndefined();
    expect(await t.deps.knex('environment_cdns').where({ environment_id: w.environment.id })).toEqual([]);
  });

  it('turns on with an activity event; a viewer may read but not change it', async () => {
    const res = await patchCdn({ enabled: true, default_ttl_seconds: 2 });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ enabled: true, default_ttl_seconds: 2 });
    expect((await w.viewerApi.get(`/environments/${w.environment.id}/cdn`)).status).not.toBe(404);
    const events = await t.deps
      .knex('activity_events')
      .where({ environment_id: w.environment.id, type: 'cdn_changed' });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ kind: 'configuration', user_id: w.owner.id });
    expect(events[0].summary).toContain('enabled the CDN');
  });
});

describe('the edge with the CDN on', () => {
  it('answers MISS, then HIT with the same body, an Age and the app headers; HEAD comes from the GET entry', async () => {
    const url = `/page${cc('public, max-age=600')}`;
    const [miss, hit] = await twice(url);
    expect(miss.headers['x-cache']).toBe('MISS');
    expect(hit.headers['x-cache']).toBe('HIT');
    expect(hit.text).toBe(miss.text);
    expect(hit.headers['cache-control']).toBe('public, max-age=600');
    expect(hit.headers['content-type']).toBe('text/plain');
    expect(Number(hit.headers['content-length'])).toBe(Buffer.byteLength(miss.text));
    expect(Number(hit.headers.age)).toBeGreaterThanOrEqual(0);
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
    for (const url of [
      `/p1${cc('private, max-age=600')}`,
      `/p2${cc('public, private, max-age=600')}`,
      `/p3${cc('public, no-store')}`,
      `/p4${cc('public, no-cache')}`,
      `/p5${cc('public, max-age=600', '&cookie=1')}`,
      `/p6${cc('max-age=600')}`,
      '/p7',
      `/p8${cc('public, max-age=0')}`,
    ]) {
      const [a, b] = await twice(url);
      expect([a.headers['x-cache'], b.headers['x-cache']], url).toEqual(['MISS', 'MISS']);
      expect(b.text, url).not.toBe(a.text);
    }
  });

  it('keeps an answer for its max-age, s-maxage first, else the default TTL', async () => {
    const short = `/short${cc('public, max-age=1')}`;
    const shared = `/shared${cc('public, max-age=1, s-maxage=600')}`;
    const fallback = `/fallback${cc('public')}`; // the default TTL: 2 s (set above)
    const first = { short: await get(short), shared: await get(shared), fallback: await get(fallback) };
    expect((await get(short)).text).toBe(first.short.text);
    expect((await get(fallback)).text).toBe(first.fallback.text);
    await sleep(1300);
    const s2 = await get(short);
    expect(s2.headers['x-cache']).toBe('MISS');
    expect(s2.text).not.toBe(first.short.text);
    const sh2 = await get(shared);
    expect(sh2.headers['x-cache']).toBe('HIT');
    expect(sh2.text).toBe(first.shared.text);
    expect((await get(fallback)).headers['x-cache']).toBe('HIT');
    await sleep(1000);
    const f3 = await get(fallback);
    expect(f3.headers['x-cache']).toBe('MISS');
    expect(f3.text).not.toBe(first.fallback.text);
  });

  it('keeps one entry per Accept-Encoding when the answer varies on it', async () => {
    const url = `/varied${cc('public, max-age=600', '&vary=Accept-Encoding')}`;
    const gzip = await get(url, { headers: { 'accept-encoding': 'gzip' } });
    const none = await get(url, { headers: { 'accept-encoding': 'identity' } });
    expect([gzip.headers['x-cache'], none.headers['x-cache']]).toEqual(['MISS', 'MISS']);
    const again = await get(url, { headers: { 'accept-encoding': 'gzip' } });
    expect(again.headers['x-cache']).toBe('HIT');
    expect(again.text).toBe(gzip.text);
    expect(again.text).toMatch(/ gzip$/);
    const none2 = await get(url, { headers: { 'accept-encoding': 'identity' } });
    expect(none2.text).toBe(none.text);
    expect(none2.text).toMatch(/ identity$/);
  });

  it("applies the edge's rules before an answer comes from the cache", async () => {
    const url = `/guarded${cc('public, max-age=600')}`;
    const [, hit] = await twice(url);
    expect(hit.headers['x-cache']).toBe('HIT');
    const edge = await owner.patch(`/environments/${w.environment.id}/edge`, { allowed_addresses: ['127.0.0.9'] });
    expect(edge.status, edge.text).toBe(200);
    await t.edge!.reload();
    expect((await get(url)).status).toBe(403);
    expect((await get(url, { localAddress: '127.0.0.9' })).headers['x-cache']).toBe('HIT');
    await owner.patch(`/projects/${w.project.id}/edge`, { blocked_user_agents: ['badbot'] });
    await t.edge!.reload();
    expect((await get(url, { localAddress: '127.0.0.9', headers: { 'user-agent': 'BadBot/1' } })).status).toBe(403);
    await owner.patch(`/projects/${w.project.id}/edge`, { blocked_user_agents: [] });
    await owner.patch(`/environments/${w.environment.id}/edge`, { allowed_addresses: [] });
    await t.edge!.reload();
    expect((await get(url)).headers['x-cache']).toBe('HIT');
  });
});

describe('the CDN with compression on', () => {
  it('serves a HIT compressed as the client accepts it, from the same entry', async () => {
    const edgeUrl = `/projects/${w.project.id}/edge`;
    expect((await owner.patch(edgeUrl, { compression: true })).status).toBe(200);
    await t.edge!.reload();
    const url = `/zipped${cc('public, max-age=600')}`;
    const plainText = await get(url);
    expect(plainText.headers['x-cache']).toBe('MISS');
    const zipped = await new Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      http
        .get(
          {
            host: '127.0.0.1',
            port: w.environment.port,
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
    await owner.patch(edgeUrl, { compression: false });
    await t.edge!.reload();
  });
});

describe('POST /environments/{id}/cdn/clear', () => {
  it('refuses prefixes not starting with / (422 naming paths.N), starting no task and clearing nothing', async () => {
    const url = `/kept${cc('public, max-age=600')}`;
    await get(url);
    const tasks = await t.deps.knex('tasks').where({ type: 'cdn_clear' }).count('id as n').first();
    for (const [body, field] of [
      [{ paths: ['/ok', 'nope'] }, 'paths.1'],
      [{ paths: ['/ok', '/fine', ''] }, 'paths.2'],
      [{ paths: '/x' }, 'paths'],
      [{ everything: true }, 'everything'],
    ] as const) {
      const res = await developer.post(`/environments/${w.environment.id}/cdn/clear`, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(Object.keys(res.body.error.fields)).toEqual([field]);
    }
    expect(await t.deps.knex('tasks').where({ type: 'cdn_clear' }).count('id as n').first()).toEqual(tasks);
    expect(await t.deps.knex('cdn_purges').where({ environment_id: w.environment.id })).toEqual([]);
    expect((await get(url)).headers['x-cache']).toBe('HIT');
  });

  it('clears only what is under the prefixes, as a logged configuration task with its search attributes', async () => {
    const urls = ['/assets/a.css', '/assets/b.js', '/docs/x', '/assetsfree'].map((u) => u + cc('public, max-age=600'));
    const before: string[] = [];
    for (const u of urls) before.push((await get(u)).text);
    for (const [i, u] of urls.entries()) expect((await get(u)).text).toBe(before[i]);

    const task = await clear({ paths: ['/assets/', '/nothing-here'] });
    expect(task).toMatchObject({ kind: 'configuration', type: 'cdn_clear', environment_id: w.environment.id });
    const after = await Promise.all(urls.map((u) => get(u)));
    expect(after.map((a) => a.headers['x-cache'])).toEqual(['MISS', 'MISS', 'HIT', 'HIT']);
    expect(after[0].text).not.toBe(before[0]);
    expect(after[2].text).toBe(before[2]);

    expect(await taskLog(t, w.api, task.id)).toContain('Clearing the CDN under /assets/, /nothing-here');
    const row = await t.deps.knex('tasks').where({ id: task.id }).first();
    const desc = await t.deps.temporal.workflow.getHandle(row.workflow_id).describe();
    expect(desc.type).toBe('clearCdn');
    expect(desc.searchAttributes).toMatchObject({
      TaskType: ['cdn_clear'],
      TaskKind: ['configuration'],
      TaskId: [task.id],
      EnvironmentId: [w.environment.id],
      ProjectId: [w.project.id],
      TeamId: [w.team.id],
    });
  });

  it('without paths clears everything; an edge that is gone does not hold the task up', async () => {
    // a row of an edge killed a minute ago, which never applied anything
    await t.deps.knex('edge_instances').insert({
      id: '00000000-0000-4000-8000-000000000001',
      purge_seq: 0,
      seen_at: t.deps.knex.raw("now() - interval '1 minute'"),
    });
    const urls = ['/one', '/two/deep'].map((u) => u + cc('public, max-age=600'));
    const before = [];
    for (const u of urls) before.push((await get(u)).text);
    expect((await get(urls[1])).headers['x-cache']).toBe('HIT');
    await clear({});
    for (const [i, u] of urls.entries()) {
      const a = await get(u);
      expect(a.headers['x-cache']).toBe('MISS');
      expect(a.text).not.toBe(before[i]);
    }
  });

  it('waits until the running edge has applied the purge', async () => {
    // the test's edge is the one live edge; its row shows the purge applied when the task ends
    const task = await clear({ paths: ['/'] });
    const purge = await t.deps.knex('cdn_purges').where({ task_id: task.id }).first();
    expect(purge.prefixes).toEqual(['/']);
    const live = await t.deps
      .knex('edge_instances')
      .where('seen_at', '>', t.deps.knex.raw("now() - interval '15 seconds'"));
    expect(live).toHaveLength(1);
    expect(Number(live[0].purge_seq)).toBeGreaterThanOrEqual(Number(purge.id));
  });

  it('does not succeed while a live edge has not applied the purge', async () => {
    // an edge that checks in (seen now) but has applied nothing yet
    const laggard = '00000000-0000-4000-8000-000000000002';
    await t.deps.knex('edge_instances').insert({ id: laggard, purge_seq: 0 });
    const res = await developer.post(`/environments/${w.environment.id}/cdn/clear`, { paths: ['/slow'] });
    expect(res.status, res.text).toBe(202);
    const purge = await until(
      () => t.deps.knex('cdn_purges').where({ task_id: res.body.id }).first(),
      (p) => Boolean(p),
    );
    // the test's own edge applies it...
    await until(
      () => t.deps.knex('edge_instances').whereNot({ id: laggard }).where('purge_seq', '>=', purge.id).first(),
      (e) => Boolean(e),
    );
    // ...and the task still waits for the other one
    expect((await waitForTask(t, w.api, res.body.id, { until: (x) => x.status === 'running' })).status).toBe('running');
    await t.deps
      .knex('edge_instances')
      .where({ id: laggard })
      .update({ purge_seq: purge.id, seen_at: t.deps.knex.fn.now() });
    expect((await waitForTask(t, w.api, res.body.id, { timeoutMs: 30_000 })).status).toBe('succeeded');
    await t.deps.knex('edge_instances').where({ id: laggard }).delete();
  });

  it('a second edge drops its entries too before the task succeeds', async () => {
    await t.deps.knex('domains').insert({
      team_id: w.team.id,
      project_id: w.project.id,
      environment_id: w.environment.id,
      hostname: 'cdn.example.test',
      status: 'verified',
      verified_at: new Date(),
      verification_value: 'x',
    });
    const second = await startEdge({
      knex: t.deps.knex,
      databaseUrl: t.config.databaseUrl!,
      host: '127.0.0.1',
      edgePort: 0,
      dataDir: `${t.dataDir}/second-edge`,
      secrets: t.deps.secrets,
    });
    try {
      const viaSecond = (url: string) =>
        new Promise<Answer>((resolve, reject) => {
          http
            .get(
              { host: '127.0.0.1', port: second.port, path: url, headers: { host: 'cdn.example.test' }, agent: false },
              (res) => {
                let text = '';
                res.on('data', (c) => (text += c));
                res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
              },
            )
            .on('error', reject);
        });
      const url = `/second${cc('public, max-age=600')}`;
      const first = await viaSecond(url);
      expect(first.headers['x-cache']).toBe('MISS');
      expect((await viaSecond(url)).headers['x-cache']).toBe('HIT');
      await clear({ paths: ['/second'] });
      const after = await viaSecond(url);
      expect(after.headers['x-cache']).toBe('MISS');
      expect(after.text).not.toBe(first.text);
    } finally {
      await second.close();
    }
    // the second edge leaves the register when it closes
    const live = await t.deps
      .knex('edge_instances')
      .where('seen_at', '>', t.deps.knex.raw("now() - interval '15 seconds'"));
    expect(live).toHaveLength(1);
  });
});
