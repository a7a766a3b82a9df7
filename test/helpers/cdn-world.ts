/**
 * The CDN tests' world (test/edge/cdn*.test.ts): the real edge (HAProxy, Varnish behind it, its control
 * plane in this process) in front of a real deployed app whose answers say how they may be cached (`?cc=`
 * sets Cache-Control, `?cookie=1` a Set-Cookie, `?vary=` a Vary); every answer's body counts the requests
 * the app has seen, so a HIT shows the same body as the MISS before it and a MISS a new one.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, expect } from 'vitest';
import { type TestContext, useTestContext } from './context';
import { commitServer, createDeployWorld, runTaskOk, waitForTask } from './deploy-fixtures';
import { spawnSystemProcess, stopChildren } from './processes';
import { sessionAgent } from './fixtures';
import type { Agent } from './http';
import { type Answer, send } from './cdn-answers';

export { cc } from './cdn-answers';

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

interface CdnWorld {
  t: TestContext;
  w: Awaited<ReturnType<typeof createDeployWorld>>;
  owner: Agent;
  developer: Agent;
}

/** A request to `port` of 127.0.0.1, or of the edge's `address` (from a loopback address of choice). */
export function request(
  port: number,
  url: string,
  opts: { method?: string; headers?: Record<string, string>; localAddress?: string; address?: string } = {},
): Promise<Answer> {
  const { address, ...rest } = opts;
  return send({ port, path: url, ...rest, ...(address ? { host: address } : {}) });
}

/** The world, set up in the file's beforeAll (read its fields in tests). */
export function useCdnWorld(): CdnWorld {
  const t = useTestContext({ edge: true });
  const world = { t } as CdnWorld;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    const w = await createDeployWorld(t);
    commitServer(w.repo, APP, 'cdn app');
    children.push(spawnSystemProcess(t, 'processes/worker.ts'));
    await runTaskOk(t, w.api, `/environments/${w.environment.id}/deploy`, undefined, 90_000);
    Object.assign(world, {
      w,
      owner: await sessionAgent(t, w.owner),
      developer: await sessionAgent(t, w.developer),
    });
  }, 120_000);
  afterAll(() => stopChildren(children));
  return world;
}

/** PATCH the environment's CDN; the edge reads the setting now, whether or not the notification arrived yet. */
export async function patchCdn(c: CdnWorld, body: unknown) {
  const res = await c.owner.patch(`/environments/${c.w.environment.id}/cdn`, body);
  await c.t.edge!.reload();
  return res;
}

/** `cdn/clear` and its task, which must succeed. */
export async function clearCdn(c: CdnWorld, body: unknown) {
  const res = await c.developer.post(`/environments/${c.w.environment.id}/cdn/clear`, body);
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(c.t, c.w.api, res.body.id, { timeoutMs: 60_000 });
  expect(task.status, task.error ?? '').toBe('succeeded');
  return res.body;
}
