/**
 * `POST /environments/{id}/cdn/clear` end to end on Varnish: the task (Temporal, PostgreSQL's cdn_purges)
 * succeeds once the live edge's purge follower has banned the prefixes in a real varnishd; and a control
 * plane that dies and starts again adopts its varnishd and applies the purges it missed before the cache
 * serves again.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VarnishPurger } from '../../edge/cdn/bans';
import { Varnish } from '../../edge/cdn/varnish';
import { PurgeFollower } from '../../edge/purges';
import { cc, type Origin, sleep, startOrigin, varnishDir, viaCdn } from '../helpers/cdn-origin';
import { useTestContext } from '../helpers/context';
import { createEnvironment, waitForTask } from '../helpers/deploy-fixtures';
import { createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import type { Agent } from '../helpers/http';
import { freePort } from '../helpers/ports';
import { createKnex } from '../../db/knex';

const OTHER = 'bbbbbbbb-0000-4000-8000-000000000002';
const t = useTestContext({ worker: true, edge: false });
let origin: Origin;
let varnish: Varnish;
let follower: PurgeFollower;
let dir: string;
let ports: { port: number; adminPort: number };
let api: Agent;
let envId: string;

const get = (url: string, env = envId) => viaCdn(ports.port, url, { env });
const urls = ['/assets/a.css', '/assets/b.js', '/docs/x', '/assetsfree'].map((u) => u + cc('public, max-age=600'));

async function startControlPlane(): Promise<void> {
  varnish = await Varnish.start({ dir, ...ports, originPort: origin.port, storage: '32m' });
  follower = new PurgeFollower(t.deps.knex, new VarnishPurger(varnish));
  await follower.start();
}

async function clear(body: unknown) {
  const res = await api.post(`/environments/${envId}/cdn/clear`, body);
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, api, res.body.id, { timeoutMs: 60_000 });
  expect(task.status, task.error ?? '').toBe('succeeded');
  return t.deps.knex('cdn_purges').where({ task_id: res.body.id }).first();
}

/** Each URL twice, both environments: what each holds now (the second answer, a HIT). */
async function fill(): Promise<{ mine: string[]; theirs: string[] }> {
  const mine: string[] = [];
  const theirs: string[] = [];
  for (const u of urls) {
    await get(u);
    await get(u, OTHER);
    const a = await get(u);
    const b = await get(u, OTHER);
    expect([a.headers['x-cache'], b.headers['x-cache']], u).toEqual(['HIT', 'HIT']);
    mine.push(a.text);
    theirs.push(b.text);
  }
  return { mine, theirs };
}

beforeAll(async () => {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  const project = await createProject(t, team);
  envId = (await createEnvironment(t, project)).id;
  api = await sessionAgent(t, owner);
  origin = await startOrigin();
  dir = varnishDir();
  ports = { port: await freePort(), adminPort: await freePort() };
  await startControlPlane();
}, 60_000);

afterAll(async () => {
  await follower?.close();
  await varnish?.close();
  await origin?.close();
  if (dir) rmSync(path.dirname(path.dirname(dir)), { recursive: true, force: true });
});

describe('cdn/clear on Varnish', () => {
  it('bans only what is under the prefixes, in that environment, before the task succeeds', async () => {
    const before = await fill();
    const purge = await clear({ paths: ['/assets/', '/nothing-here'] });
    const after = [];
    for (const u of urls) after.push(await get(u));
    expect(after.map((a) => a.headers['x-cache'])).toEqual(['MISS', 'MISS', 'HIT', 'HIT']);
    expect(after[0].text).not.toBe(before.mine[0]);
    expect(after[2].text).toBe(before.mine[2]);
    for (const [i, u] of urls.entries()) expect((await get(u, OTHER)).text, u).toBe(before.theirs[i]);
    const me = await t.deps.knex('edge_instances').where({ id: follower.id }).first();
    expect(Number(me.purge_seq)).toBeGreaterThanOrEqual(Number(purge.id));
  });

  it('without paths bans the whole environment, and only it', async () => {
    const before = await fill();
    await clear({});
    for (const [i, u] of urls.entries()) {
      const a = await get(u);
      expect(a.headers['x-cache'], u).toBe('MISS');
      expect(a.text).not.toBe(before.mine[i]);
      expect((await get(u, OTHER)).text, u).toBe(before.theirs[i]);
    }
  });

  it('a control plane that died serves nothing meanwhile, and its successor applies the purges it missed', async () => {
    const before = await fill();
    // the control plane goes; varnishd stays (its row is dropped here so the task need not wait 15 s for it)
    await varnish.detach();
    await follower.close();
    const deadline = Date.now() + 15_000;
    while ((await get(urls[2])).headers['x-cache'] === 'HIT' && Date.now() < deadline) await sleep(100);
    expect((await get(urls[3])).headers['x-cache']).toBe('MISS'); // the lease is sick: nothing from the cache
    await clear({ paths: ['/assets/'] });
    await startControlPlane();
    expect(varnish.adopted).toBe(true);
    const after = [];
    for (const u of urls) after.push(await get(u));
    expect(after.map((a) => a.headers['x-cache'])).toEqual(['MISS', 'MISS', 'HIT', 'HIT']);
    expect(after[0].text).not.toBe(before.mine[0]);
    expect(after[3].text).toBe(before.mine[3]); // the cache outlived its control plane
  });

  it('serves nothing from the cache once the follower has lost its database for a while', async () => {
    const before = await fill();
    await follower.close();
    const knex = createKnex(t.config.databaseUrl!);
    follower = new PurgeFollower(knex, new VarnishPurger(varnish));
    await follower.start();
    expect((await get(urls[0])).text).toBe(before.mine[0]);
    await knex.destroy(); // every check in fails from now on
    const deadline = Date.now() + 20_000;
    while ((await get(urls[0])).headers['x-cache'] === 'HIT' && Date.now() < deadline) await sleep(200);
    const during = await get(urls[1]);
    expect(during.headers['x-cache']).toBe('MISS');
    expect(during.text).not.toBe(before.mine[1]);
    expect(follower.fresh()).toBe(false);
  }, 40_000);
});
