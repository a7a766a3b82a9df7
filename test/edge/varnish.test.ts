/**
 * The CDN tier on a real varnishd (edge/cdn/): the VCL's rules against a real origin, bans by prefix and by
 * environment, the lease, and the process's life (a varnishd that dies comes back; a control plane that
 * starts adopts the running one, cache and all).
 */
import { rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VarnishPurger, banWords, escapeRegex } from '../../edge/cdn/bans';
import { Varnish } from '../../edge/cdn/varnish';
import { takenPortOf } from '../../edge/listen-ports';
import {
  type Answer,
  cc,
  expectKeptForTheirMaxAge,
  expectMissThenHit,
  expectNeverKept,
  expectOneEntryPerEncoding,
  twice as twiceWith,
} from '../helpers/cdn-answers';
import { type Origin, startOrigin, varnishDir, viaCdn } from '../helpers/cdn-origin';
import { freePort } from '../helpers/ports';
import { until } from '../helpers/until';

const ENV = 'aaaaaaaa-0000-4000-8000-000000000001';
const OTHER = 'bbbbbbbb-0000-4000-8000-000000000002';

let origin: Origin;
let varnish: Varnish;
let dir: string;
let ports: { port: number; adminPort: number };

type Options = Partial<Parameters<typeof viaCdn>[2]>;
const get = (url: string, o: Options = {}) => viaCdn(ports.port, url, { env: ENV, ...o });
const twice = (url: string, o: Options = {}): Promise<[Answer, Answer]> => twiceWith(get, url, o);

beforeAll(async () => {
  origin = await startOrigin();
  dir = varnishDir();
  ports = { port: await freePort(), adminPort: await freePort() };
  varnish = await Varnish.start({ dir, ...ports, originPort: origin.port, storage: '32m' });
  await varnish.resume();
}, 60_000);

afterAll(async () => {
  await varnish?.close();
  await origin?.close();
  if (dir) rmSync(path.dirname(path.dirname(dir)), { recursive: true, force: true });
});

describe('the VCL', () => {
  it('answers MISS, then HIT with the same body, an Age and the app headers; nothing of ours reaches either side', async () => {
    const url = `/page${cc('public, max-age=600', '&leak=1')}`;
    const [miss, hit] = await expectMissThenHit(get, url);
    expect(miss.status).toBe(200);
    expect(hit.text).toMatch(new RegExp(`^${ENV} app.example.test GET /page #`));
    for (const a of [miss, hit]) {
      expect(Object.keys(a.headers).filter((h) => h.startsWith('x-vc-') || h === 'x-varnish' || h === 'via')).toEqual(
        [],
      );
    }
    // the origin got the request as HAProxy sent it: X-Forwarded-For untouched, no marker of Varnish's
    const got = origin.seen.at(-1)!;
    expect(got.headers['x-forwarded-for']).toBe('203.0.113.7');
    expect(got.headers['x-vc-env']).toBe(ENV);
    expect(Object.keys(got.headers).filter((h) => ['x-vc-cache', 'x-varnish', 'via'].includes(h))).toEqual([]);
    // another query is another entry
    const other = await get(`${url}&page=2`);
    expect(other.headers['x-cache']).toBe('MISS');
    expect(other.text).not.toBe(miss.text);
  });

  it('serves HEAD from the GET entry; a HEAD that misses goes to the app as HEAD and stores nothing', async () => {
    const url = `/head${cc('public, max-age=600')}`;
    const headFirst = await get(url, { method: 'HEAD' });
    expect(headFirst.headers['x-cache']).toBe('MISS');
    expect(origin.seen.at(-1)!.method).toBe('HEAD');
    const [a, b] = await twice(url);
    expect([a.headers['x-cache'], b.headers['x-cache']]).toEqual(['MISS', 'HIT']);
    expect(a.text).toContain(' GET /head #');
    const head = await get(url, { method: 'HEAD' });
    expect(head.headers['x-cache']).toBe('HIT');
    expect(head.text).toBe('');
    expect(Number(head.headers['content-length'])).toBe(Buffer.byteLength(a.text));
  });

  it('never keeps private, no-store, no-cache, Set-Cookie, Vary: *, another status, or answers without public', async () => {
    // and here, as well: Vary: *, another status, a directive that only starts like public
    await expectNeverKept(get, [
      `/p9${cc('Public, Max-Age=600', '&vary=*')}`,
      `/p10${cc('public, max-age=600', '&status=404')}`,
      `/p11${cc('publicity, max-age=600')}`,
    ]);
    // any case, any order
    const [, hit] = await twice(`/p12${cc('max-age=600 , PUBLIC')}`);
    expect(hit.headers['x-cache']).toBe('HIT');
  });

  it('passes other methods, Range and bodies to the app without X-Cache', async () => {
    const url = `/pass${cc('public, max-age=600')}`;
    await twice(url);
    for (const o of [
      { method: 'POST', body: 'x=1' },
      { headers: { range: 'bytes=0-3' } },
      { method: 'PUT', body: 'y' },
    ]) {
      const before = origin.seen.length;
      const a = await get(url, o);
      expect(a.headers['x-cache'], JSON.stringify(o)).toBeUndefined();
      expect(origin.seen.length, JSON.stringify(o)).toBe(before + 1);
    }
    expect((await get(url)).headers['x-cache']).toBe('HIT');
  });

  it('keeps an answer for its max-age, s-maxage first, else the default TTL (X-VC-Default-TTL), never stale', async () => {
    await expectKeptForTheirMaxAge(get, (url) => get(url, { ttl: 2 }));
  });

  it('keeps one entry per Accept-Encoding when the answer varies on it, and passes Accept-Encoding as sent', async () => {
    await expectOneEntryPerEncoding(get);
  });

  it('keys on Host: an answer echoing an attacker Host is never served for the real one', async () => {
    const url = `/echo${cc('public, max-age=600')}`;
    const [, poisoned] = await twice(url, { host: 'evil.example' });
    expect(poisoned.headers['x-cache']).toBe('HIT');
    expect(poisoned.text).toContain(' evil.example ');
    const real = await get(url);
    expect(real.headers['x-cache']).toBe('MISS');
    expect(real.text).toContain(' app.example.test ');
    expect(real.text).not.toContain('evil');
    // Host is case-insensitive; the environment is part of the key too
    expect((await get(url, { host: 'APP.example.test' })).text).toBe(real.text);
    const other = await get(url, { env: OTHER });
    expect(other.headers['x-cache']).toBe('MISS');
    expect(other.text).toMatch(new RegExp(`^${OTHER} `));
  });

  it('refuses a request that did not come through HAProxy (no X-VC-Env)', async () => {
    const res = await viaCdn(ports.port, '/x', { env: '' });
    expect(res.status).toBe(421);
  });
});

describe('bans', () => {
  it('escapes regex metacharacters and builds lurker-friendly words', () => {
    expect(escapeRegex('/a.b*(c)?[d]+$^|\\')).toBe('\\/a\\.b\\*\\(c\\)\\?\\[d\\]\\+\\$\\^\\|\\\\');
    expect(banWords(ENV, [])).toEqual([['obj.http.x-vc-env', '==', ENV]]);
    expect(banWords(ENV, ['/a.css'])).toEqual([
      ['obj.http.x-vc-env', '==', ENV, '&&', 'obj.http.x-vc-url', '~', '^\\/a\\.css'],
    ]);
  });

  it('drop what is under the prefixes of one environment, literally, and nothing of another', async () => {
    const purger = new VarnishPurger(varnish);
    const urls = ['/assets/a.css', '/assets/b.js', '/docs/x', '/assetsfree', '/a.c/x', '/abc/x'].map(
      (u) => u + cc('public, max-age=600'),
    );
    const mine: string[] = [];
    const theirs: string[] = [];
    for (const u of urls) {
      mine.push((await get(u)).text);
      theirs.push((await get(u, { env: OTHER })).text);
    }
    for (const u of urls) expect((await get(u)).headers['x-cache'], u).toBe('HIT');
    await purger.purge(ENV, ['/assets/', '/a.c/', '/nothing-here']);
    const after = [];
    for (const u of urls) after.push(await get(u));
    expect(after.map((a) => a.headers['x-cache'])).toEqual(['MISS', 'MISS', 'HIT', 'HIT', 'MISS', 'HIT']);
    expect(after[0].text).not.toBe(mine[0]);
    expect(after[2].text).toBe(mine[2]);
    for (const [i, u] of urls.entries()) expect((await get(u, { env: OTHER })).text, u).toBe(theirs[i]);

    // an absolute-form request line is the same entry as its path, and banned with it
    const abs = await get(`http://app.example.test${urls[2]}`);
    expect(abs.headers['x-cache']).toBe('HIT');
    expect(abs.text).toBe(mine[2]);
    await purger.purge(ENV, ['/docs/']);
    expect((await get(`http://app.example.test${urls[2]}`)).headers['x-cache']).toBe('MISS');

    await purger.purge(ENV, []);
    for (const u of urls) expect((await get(u)).headers['x-cache'], u).toBe('MISS');
    for (const [i, u] of urls.entries()) expect((await get(u, { env: OTHER })).text, u).toBe(theirs[i]);
  });
});

describe('the lease', () => {
  it('serves nothing from the cache while suspended, and the same entries again once resumed', async () => {
    const url = `/leased${cc('public, max-age=600')}`;
    const [first, hit] = await twice(url);
    expect(hit.headers['x-cache']).toBe('HIT');
    await varnish.suspend();
    const during = await get(url);
    expect(during.headers['x-cache']).toBe('MISS');
    expect(during.text).not.toBe(first.text);
    await varnish.resume();
    const again = await get(url);
    expect(again.headers['x-cache']).toBe('HIT');
    expect(again.text).toBe(first.text);
  });
});

describe('the process', () => {
  it('is adopted, cache and all, by a control plane that starts while it runs', async () => {
    const url = `/adopted${cc('public, max-age=600')}`;
    const [first] = await twice(url);
    const purger = new VarnishPurger(varnish);
    await purger.applied(7);
    const pid = varnish.processId;
    await varnish.detach(); // as if the control plane were killed: varnishd keeps running
    // without its control plane, the lease goes sick and nothing is served from the cache
    const orphaned = await until(
      'an answer not from the cache',
      () => get(url),
      (a) => a.text !== first.text,
      15_000,
    );
    expect(orphaned.headers['x-cache']).toBe('MISS');
    // no ports given: those it was started with (state.json)
    varnish = await Varnish.start({ dir, originPort: origin.port, storage: '32m' });
    expect(varnish.adopted).toBe(true);
    expect(varnish.port).toBe(ports.port);
    expect(varnish.processId).toBe(pid);
    expect(await new VarnishPurger(varnish).resumeFrom()).toBe(7);
    expect((await get(url)).headers['x-cache']).toBe('MISS'); // not before resume()
    await varnish.resume();
    const after = await get(url);
    expect(after.headers['x-cache']).toBe('HIT');
    expect(after.text).toBe(first.text);
  });

  it('fails its start on a port another program holds, and names the port so that the edge picks another', async () => {
    const held = net.createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => held.listen(port, '127.0.0.1', resolve));
    const other = varnishDir();
    try {
      const err = await Varnish.start({
        dir: other,
        port,
        adminPort: await freePort(),
        originPort: origin.port,
        storage: '16m',
      }).then(
        () => null,
        (e: Error) => e,
      );
      expect(err?.message).toContain(`127.0.0.1:${port}`);
      // edge/server.ts starts again with new picks for the port this finds
      expect(takenPortOf(err!.message)).toBe(port);
      // the same when varnishd's manager opens the listener anew for a child it starts again (a CI run's message)
      const reopened =
        'varnishd exited at start: Debug: Child cleanup complete | Error: Could not reopen listen socket 127.0.0.1:10125: ' +
        'Address already in use | Error: Could not reopen listening sockets. Exiting.';
      expect(takenPortOf(reopened)).toBe(10125);
      expect(takenPortOf('varnishd exited at start: Error: Could not load VCL')).toBeNull();
    } finally {
      await new Promise((resolve) => held.close(resolve));
      rmSync(path.dirname(path.dirname(other)), { recursive: true, force: true });
    }
  });

  it('refuses to take the varnishd of a control plane that is alive', async () => {
    await expect(Varnish.start({ dir, originPort: origin.port })).rejects.toThrow(/another edge control plane/);
    expect((await get(`/still${cc('public')}`)).status).toBe(200);
  });

  it('bans the whole cache it adopts when it does not know which purges it applied', async () => {
    const url = `/unknown-seq${cc('public, max-age=600')}`;
    await twice(url);
    const other = `/unknown-seq${cc('public, max-age=600')}`;
    expect((await twice(other, { env: OTHER }))[1].headers['x-cache']).toBe('HIT');
    await varnish.detach();
    rmSync(path.join(dir, 'purge-seq'), { force: true });
    varnish = await Varnish.start({ dir, originPort: origin.port, storage: '32m' });
    expect(varnish.adopted).toBe(true);
    expect(await new VarnishPurger(varnish).resumeFrom()).toBeNull();
    await varnish.resume();
    expect((await get(url)).headers['x-cache']).toBe('MISS');
    expect((await get(other, { env: OTHER })).headers['x-cache']).toBe('MISS');
  });

  it('loads a changed VCL into the varnishd it adopts (another origin), keeping the cache', async () => {
    const url = `/kept-on-reload${cc('public, max-age=600')}`;
    const [first] = await twice(url);
    const second = await startOrigin();
    try {
      await varnish.detach();
      varnish = await Varnish.start({ dir, originPort: second.port, storage: '32m' });
      expect(varnish.adopted).toBe(true);
      await varnish.resume();
      expect((await get(url)).text).toBe(first.text);
      const fresh = await get(`/new-origin${cc('public, max-age=600')}`);
      expect(fresh.headers['x-cache']).toBe('MISS');
      expect(second.seen.map((r) => r.url)).toEqual([`/new-origin${cc('public, max-age=600')}`]);
      const vcls = (await varnish.command('vcl.list')).trim().split('\n');
      expect(vcls.filter((l) => !l.startsWith('discarded'))).toEqual([expect.stringMatching(/^active\s/)]);
    } finally {
      await varnish.detach();
      varnish = await Varnish.start({ dir, originPort: origin.port, storage: '32m' });
      await varnish.resume();
      await second.close();
    }
  });

  it('fails its start, naming varnishd, when varnishd cannot be started; the control plane goes on', async () => {
    // a varnishd that is not executable: the spawn's EACCES ('error', no exit code) ended the process it ran in
    const notRunnable = path.join(path.dirname(dir), 'varnishd-not-executable');
    writeFileSync(notRunnable, '#!/bin/sh\n', { mode: 0o644 });
    const other = path.join(path.dirname(dir), 'not-started');
    const start = Varnish.start({
      dir: other,
      port: await freePort(),
      adminPort: await freePort(),
      originPort: origin.port,
      bin: notRunnable,
    });
    await expect(start).rejects.toThrow(`varnishd could not be started: spawn ${notRunnable} EACCES`);
    // the running one is untouched
    expect(() => process.kill(varnish.processId, 0)).not.toThrow();
  });

  it('comes back, empty, when varnishd is killed', async () => {
    const url = `/killed${cc('public, max-age=600')}`;
    await twice(url);
    const pid = varnish.processId;
    let restarted = false;
    varnish.onRestart = () => {
      restarted = true;
    };
    process.kill(pid, 'SIGKILL');
    await until('varnishd restarted', () => restarted, 15_000);
    expect(restarted).toBe(true);
    expect(varnish.processId).not.toBe(pid);
    expect(varnish.adopted).toBe(false);
    const res = await until(
      'a 200 from the new varnishd',
      () => get(url).catch(() => null),
      (a) => a?.status === 200,
      15_000,
    );
    expect(res?.headers['x-cache']).toBe('MISS');
    expect((await get(url)).headers['x-cache']).toBe('HIT');
  });
});
