/**
 * `POST /environments/{id}/cdn/clear` on the real edge (HAProxy, Varnish, the purge follower's bans): what
 * is under the prefixes goes, the task succeeds only once every live edge applied the purge, a second edge
 * (its own Varnish) drops its entries too, and an edge that lost its database serves nothing cached. An edge
 * whose picked ports another program took, before a start or while its varnishd was down, serves on others.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { startEdge } from '../../edge/server';
import { createKnex, SERVES_WITHOUT_DATABASE } from '../../db/knex';
import { cc, clearCdn, patchCdn, request, useCdnWorld } from '../helpers/cdn-world';
import { taskLog, waitForTask } from '../helpers/deploy-fixtures';
import { until } from '../helpers/until';
import { freePort } from '../helpers/ports';
import { cuttableRelay } from '../helpers/cuttable-relay';

const c = useCdnWorld();
/**
 * Another edge of the same system, on a loopback address of its own (HAProxy binds with noreuseport, so two edges
 * never share a port, as two machines would not), with its own DATA_DIR (so its own Varnish).
 */
const edgeOn = (host: string, dataDir: string, more: Partial<Parameters<typeof startEdge>[0]> = {}) =>
  startEdge({
    knex: c.t.deps.knex,
    databaseUrl: c.t.config.databaseUrl!,
    host,
    edgePort: 0,
    environmentPorts: c.t.config.environmentPorts,
    dataDir,
    secrets: c.t.deps.secrets,
    ...more,
  });
const get = (url: string, opts: Parameters<typeof request>[2] = {}) => request(c.w.environment.port, url, opts);
/** Stops an edge a test started beside the world's, lets go of the ports held for it, and removes the rows it added. */
async function stopExtraEdge(edge: { close(): Promise<void> }, holders: net.Server[], before: Set<string>) {
  await edge.close().catch(() => undefined);
  for (const h of holders) await new Promise((r) => h.close(r));
  await c.t.deps
    .knex('edge_instances')
    .whereNotIn('id', [...before])
    .delete();
}

/** cdn.example.test, verified, on the environment: the name the other edges' requests carry. */
async function cdnDomain(): Promise<void> {
  if (await c.t.deps.knex('domains').where({ hostname: 'cdn.example.test' }).first()) return;
  await c.t.deps.knex('domains').insert({
    team_id: c.w.team.id,
    project_id: c.w.project.id,
    environment_id: c.w.environment.id,
    hostname: 'cdn.example.test',
    status: 'verified',
    verified_at: new Date(),
    verification_value: 'x',
  });
}

beforeAll(async () => {
  expect((await patchCdn(c, { enabled: true, default_ttl_seconds: 600 })).status).toBe(200);
});

describe('POST /environments/{id}/cdn/clear', () => {
  it('refuses prefixes not starting with / (422 naming paths.N), starting no task and clearing nothing', async () => {
    const url = `/kept${cc('public, max-age=600')}`;
    await get(url);
    const tasks = await c.t.deps.knex('tasks').where({ type: 'cdn_clear' }).count('id as n').first();
    for (const [body, field] of [
      [{ paths: ['/ok', 'nope'] }, 'paths.1'],
      [{ paths: ['/ok', '/fine', ''] }, 'paths.2'],
      [{ paths: '/x' }, 'paths'],
      [{ everything: true }, 'everything'],
    ] as const) {
      const res = await c.developer.post(`/environments/${c.w.environment.id}/cdn/clear`, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(Object.keys(res.body.error.fields)).toEqual([field]);
    }
    expect(await c.t.deps.knex('tasks').where({ type: 'cdn_clear' }).count('id as n').first()).toEqual(tasks);
    expect(await c.t.deps.knex('cdn_purges').where({ environment_id: c.w.environment.id })).toEqual([]);
    expect((await get(url)).headers['x-cache']).toBe('HIT');
  });

  it('clears only what is under the prefixes, as a logged configuration task with its search attributes', async () => {
    const urls = ['/assets/a.css', '/assets/b.js', '/docs/x', '/assetsfree'].map((u) => u + cc('public, max-age=600'));
    const before: string[] = [];
    for (const u of urls) before.push((await get(u)).text);
    for (const [i, u] of urls.entries()) expect((await get(u)).text).toBe(before[i]);

    const task = await clearCdn(c, { paths: ['/assets/', '/nothing-here'] });
    expect(task).toMatchObject({ kind: 'configuration', type: 'cdn_clear', environment_id: c.w.environment.id });
    const after = await Promise.all(urls.map((u) => get(u)));
    expect(after.map((a) => a.headers['x-cache'])).toEqual(['MISS', 'MISS', 'HIT', 'HIT']);
    expect(after[0].text).not.toBe(before[0]);
    expect(after[2].text).toBe(before[2]);

    expect(await taskLog(c.t, c.w.api, task.id)).toContain('Clearing the CDN under /assets/, /nothing-here');
    const row = await c.t.deps.knex('tasks').where({ id: task.id }).first();
    const desc = await c.t.deps.temporal.workflow.getHandle(row.workflow_id).describe();
    expect(desc.type).toBe('clearCdn');
    expect(desc.searchAttributes).toMatchObject({
      TaskType: ['cdn_clear'],
      TaskKind: ['configuration'],
      TaskId: [task.id],
      EnvironmentId: [c.w.environment.id],
      ProjectId: [c.w.project.id],
      TeamId: [c.w.team.id],
    });
  });

  it('without paths clears everything; an edge that is gone does not hold the task up', async () => {
    // a row of an edge killed a minute ago, which never applied anything
    await c.t.deps.knex('edge_instances').insert({
      id: '00000000-0000-4000-8000-000000000001',
      purge_seq: 0,
      seen_at: c.t.deps.knex.raw("now() - interval '1 minute'"),
    });
    const urls = ['/one', '/two/deep'].map((u) => u + cc('public, max-age=600'));
    const before = [];
    for (const u of urls) before.push((await get(u)).text);
    expect((await get(urls[1])).headers['x-cache']).toBe('HIT');
    await clearCdn(c, {});
    for (const [i, u] of urls.entries()) {
      const a = await get(u);
      expect(a.headers['x-cache']).toBe('MISS');
      expect(a.text).not.toBe(before[i]);
    }
  });

  it('waits until the running edge has applied the purge', async () => {
    // the test's edge is the one live edge; its row shows the purge applied when the task ends
    const task = await clearCdn(c, { paths: ['/'] });
    const purge = await c.t.deps.knex('cdn_purges').where({ task_id: task.id }).first();
    expect(purge.prefixes).toEqual(['/']);
    const live = await c.t.deps
      .knex('edge_instances')
      .where('seen_at', '>', c.t.deps.knex.raw("now() - interval '15 seconds'"));
    expect(live).toHaveLength(1);
    expect(Number(live[0].purge_seq)).toBeGreaterThanOrEqual(Number(purge.id));
  });

  it('does not succeed while a live edge has not applied the purge', async () => {
    // an edge that checks in (seen now) but has applied nothing yet
    const laggard = '00000000-0000-4000-8000-000000000002';
    await c.t.deps.knex('edge_instances').insert({ id: laggard, purge_seq: 0 });
    const res = await c.developer.post(`/environments/${c.w.environment.id}/cdn/clear`, { paths: ['/slow'] });
    expect(res.status, res.text).toBe(202);
    const purge = await until(
      'the purge row',
      () => c.t.deps.knex('cdn_purges').where({ task_id: res.body.id }).first(),
      { timeoutMs: 15_000, intervalMs: 50 },
    );
    // the test's own edge applies it...
    await until(
      "the purge applied by the test's edge",
      () => c.t.deps.knex('edge_instances').whereNot({ id: laggard }).where('purge_seq', '>=', purge.id).first(),
      { timeoutMs: 15_000, intervalMs: 50 },
    );
    // ...and the task still waits for the other one
    expect((await waitForTask(c.t, c.w.api, res.body.id, { until: (x) => x.status === 'running' })).status).toBe(
      'running',
    );
    await c.t.deps
      .knex('edge_instances')
      .where({ id: laggard })
      .update({ purge_seq: purge.id, seen_at: c.t.deps.knex.fn.now() });
    expect((await waitForTask(c.t, c.w.api, res.body.id, { timeoutMs: 30_000 })).status).toBe('succeeded');
    await c.t.deps.knex('edge_instances').where({ id: laggard }).delete();
  });

  it('a second edge drops its entries too before the task succeeds', async () => {
    await cdnDomain();
    const second = await edgeOn('127.0.0.2', `${c.t.dataDir}/second-edge`);
    try {
      const viaSecond = (url: string) =>
        request(second.port, url, { address: '127.0.0.2', headers: { host: 'cdn.example.test' } });
      const url = `/second${cc('public, max-age=600')}`;
      const first = await viaSecond(url);
      expect(first.headers['x-cache']).toBe('MISS');
      expect((await viaSecond(url)).headers['x-cache']).toBe('HIT');
      await clearCdn(c, { paths: ['/second'] });
      const after = await viaSecond(url);
      expect(after.headers['x-cache']).toBe('MISS');
      expect(after.text).not.toBe(first.text);
    } finally {
      await second.close();
    }
    // the second edge leaves the register when it closes
    const live = await c.t.deps
      .knex('edge_instances')
      .where('seen_at', '>', c.t.deps.knex.raw("now() - interval '15 seconds'"));
    expect(live).toHaveLength(1);
  });

  it('an edge whose database host is cut off serves nothing from its cache, and stops within seconds', async () => {
    // the database reached through a relay that, once cut, drops what it holds and takes new connections without
    // ever answering: as a host whose packets are dropped (pg's own connect would wait on it for good)
    const db = new URL(c.t.config.databaseUrl!);
    const relay = await cuttableRelay({ host: db.hostname, port: Number(db.port || 5432) });
    db.host = `127.0.0.1:${relay.port}`;
    const knex = createKnex(db.toString(), SERVES_WITHOUT_DATABASE);
    const before = new Set((await c.t.deps.knex('edge_instances').select('id')).map((r) => r.id));
    const third = await edgeOn('127.0.0.3', `${c.t.dataDir}/third-edge`, { knex, databaseUrl: db.toString() });
    let closed = false;
    try {
      const via = (url: string) =>
        request(third.port, url, { address: '127.0.0.3', headers: { host: 'cdn.example.test' } });
      const url = `/cut-off${cc('public, max-age=600')}`;
      const first = await via(url);
      expect((await via(url)).text).toBe(first.text);
      relay.cut(); // every check in of its purge follower waits on the database from now on
      const during = await until(
        'a MISS',
        () => via(url),
        (a) => a.headers['x-cache'] === 'MISS',
        { timeoutMs: 25_000, intervalMs: 50 },
      );
      expect(during.headers['x-cache']).toBe('MISS');
      expect(during.text).not.toBe(first.text);
      // its stop waits on the database at most the pool's 5 s a step, not knex's minute a connection
      const began = performance.now();
      await third.close().catch(() => undefined);
      closed = true;
      expect(performance.now() - began).toBeLessThan(20_000);
    } finally {
      if (!closed) await third.close().catch(() => undefined);
      await knex.destroy().catch(() => undefined);
      relay.close();
      await c.t.deps
        .knex('edge_instances')
        .whereNotIn('id', [...before])
        .delete();
    }
  }, 90_000);

  it('an edge whose picked ports another program took meanwhile picks others and serves through its CDN', async () => {
    // the ports an edge kept for its CDN tier (its origin listener's, varnishd's), each taken by another program
    // before the start (as a connection or another edge may take one between the look and the bind)
    const held = await Promise.all([freePort(), freePort(), freePort()]);
    const holders = await Promise.all(held.map(listenOn));
    await cdnDomain();
    const dataDir = `${c.t.dataDir}/fourth-edge`;
    const cdnDir = `${dataDir}/edge/varnish`;
    mkdirSync(cdnDir, { recursive: true });
    writeFileSync(`${cdnDir}/origin-port`, String(held[0]));
    writeFileSync(`${cdnDir}/state.json`, JSON.stringify({ port: held[1], adminPort: held[2] }));
    const before = new Set((await c.t.deps.knex('edge_instances').select('id')).map((r) => r.id));
    const warned: unknown[] = [];
    const fourth = await edgeOn('127.0.0.4', dataDir, {
      logger: { warn: (o: unknown) => warned.push(o), info: () => undefined },
    });
    try {
      // varnishd's listener, then HAProxy's origin listener: two starts lost a port, the third served
      expect(warned).toEqual(
        expect.arrayContaining([
          { port: held[1], attempt: 1 },
          { port: held[0], attempt: 2 },
        ]),
      );
      const origin = Number(readFileSync(`${cdnDir}/origin-port`, 'utf8'));
      const varnish = JSON.parse(readFileSync(`${cdnDir}/state.json`, 'utf8'));
      expect(held).not.toContain(origin);
      expect(held).not.toContain(varnish.port);
      expect(held).not.toContain(varnish.adminPort);
      const via = (url: string) =>
        request(fourth.port, url, { address: '127.0.0.4', headers: { host: 'cdn.example.test' } });
      const url = `/picked-again${cc('public, max-age=600')}`;
      const first = await via(url);
      expect(first.status).toBe(200);
      expect(first.headers['x-cache']).toBe('MISS');
      const again = await via(url);
      expect(again.headers['x-cache']).toBe('HIT');
      expect(again.text).toBe(first.text);
    } finally {
      await stopExtraEdge(fourth, holders, before);
    }
  }, 90_000);

  it('an edge whose varnishd died while another program took its port starts it on another, and HAProxy follows', async () => {
    await cdnDomain();
    const dataDir = `${c.t.dataDir}/fifth-edge`;
    const cdnDir = `${dataDir}/edge/varnish`;
    const before = new Set((await c.t.deps.knex('edge_instances').select('id')).map((r) => r.id));
    const warned: unknown[] = [];
    const fifth = await edgeOn('127.0.0.5', dataDir, {
      logger: { warn: (o: unknown) => warned.push(o), info: () => undefined },
    });
    const holders: net.Server[] = [];
    try {
      const via = (url: string) =>
        request(fifth.port, url, { address: '127.0.0.5', headers: { host: 'cdn.example.test' } });
      const url = `/moved-varnish${cc('public, max-age=600')}`;
      expect((await via(url)).headers['x-cache']).toBe('MISS');
      expect((await via(url)).headers['x-cache']).toBe('HIT');
      const kept = () => JSON.parse(readFileSync(`${cdnDir}/state.json`, 'utf8')) as { port: number };
      const first = kept().port;
      // varnishd SIGKILLed, and its port taken by another program the moment it is free; should the varnishd started
      // again have bound it first (the port was free for a moment), it is killed again
      const pidOf = () => {
        try {
          return Number(readFileSync(`${cdnDir}/varnishd.pid`, 'utf8').trim()) || 0;
        } catch {
          return 0;
        }
      };
      let held = 0;
      for (let attempt = 0; attempt < 5 && !held; attempt++) {
        const pid = await until('a running varnishd', () => pidOf() > 0 && pidOf());
        process.kill(pid, 'SIGKILL');
        const got = await until(
          'the port of the dead varnishd free, or a varnishd started again on it',
          async () => (await listenOn(first).catch(() => null)) ?? (![0, pid].includes(pidOf()) && 'restarted'),
          { timeoutMs: 10_000, intervalMs: 5 },
        );
        if (got !== 'restarted') {
          holders.push(got);
          held = first;
        }
      }
      expect(held).toBe(first);
      // it listens on another port, kept for the next start, and HAProxy sends the CDN's requests there
      const moved = await until(
        'varnishd on another port',
        () => kept().port,
        (p) => p !== held,
        20_000,
      );
      expect(warned).toEqual(expect.arrayContaining([{ taken: held, port: moved, which: 'port' }]));
      const again = await until(
        'the CDN served through the edge again',
        () => via(url).catch(() => null),
        (a) => a?.status === 200 && a.headers['x-cache'] !== undefined,
        20_000,
      );
      // the new varnishd's cache is empty: a MISS, then a HIT
      expect(again?.headers['x-cache']).toBe('MISS');
      expect((await via(url)).headers['x-cache']).toBe('HIT');
      expect(readFileSync(`${dataDir}/edge/haproxy/haproxy.cfg`, 'utf8')).toContain(`server cdn 127.0.0.1:${moved}`);
    } finally {
      await stopExtraEdge(fifth, holders, before);
    }
  }, 90_000);
});

/**
 * A listener on 127.0.0.1:port (another program's, which closes what it accepts: a request HAProxy sends there
 * before it follows Varnish fails at once), or a rejection when the port is held.
 */
function listenOn(port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const s = net.createServer((socket) => socket.destroy());
    s.once('error', reject);
    s.listen({ port, host: '127.0.0.1', exclusive: true }, () => resolve(s));
  });
}
