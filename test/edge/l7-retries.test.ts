/**
 * The edge's L7 retry (edge/haproxy/config.ts: `retry-on conn-failure empty-response`) sends a request again when
 * the instance closed the connection without answering: a GET on a kept-alive connection to an instance that just
 * stopped is answered by the next one, so that no request fails through a deploy. Only a request that is safe to
 * send twice is retried: GET, HEAD and OPTIONS. A POST, PUT, PATCH or DELETE that the app received and then
 * dropped is never sent to the app a second time (it may have charged a card, written a row): the client gets the
 * edge's 502 and decides.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awaitEdges } from '../../db/queries/edge-routes';
import { useTestContext } from '../helpers/context';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { createProject, createTeam, createUser } from '../helpers/fixtures';
import { until } from '../helpers/until';
import { send } from '../helpers/cdn-answers';

const t = useTestContext({ edge: true });
let app: http.Server;
let env: { id: string; port: number };
/** What the app received on /drop, by method. */
const received = new Map<string, number>();

beforeAll(async () => {
  app = http.createServer((req, res) => {
    if (req.url?.startsWith('/drop')) {
      // received, then the connection closed without an answer (a crash in the middle of the request)
      received.set(req.method ?? '', (received.get(req.method ?? '') ?? 0) + 1);
      req.resume();
      req.on('end', () => req.socket.destroy());
      return;
    }
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`${req.method} ok\n`);
    });
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  const appPort = (app.address() as { port: number }).port;
  const user = await createUser(t);
  const project = await createProject(t, await createTeam(t, user));
  env = await createEnvironment(t, project, { name: 'retries' });
  await t.deps
    .knex('edge_routes')
    .insert({ environment_id: env.id, upstreams: JSON.stringify([{ id: '1', host: '127.0.0.1', port: appPort }]) });
  await awaitEdges(t.deps.knex);
}, 60_000);
afterAll(async () => {
  app?.closeAllConnections();
  await new Promise((r) => app?.close(r));
});

/** A request of `method` to the environment's port, on a connection of its own. */
const sendTo = (method: string, path: string, body?: string) =>
  send({ port: env.port, method, path, headers: { host: 'retries.example' } }, body);

/** The instance answers again (a dropped connection may have marked it down until its next check). */
async function appAnswers(): Promise<void> {
  await until('the instance to answer', async () => (await sendTo('GET', '/')).status === 200, { timeoutMs: 15_000 });
}

describe('a request the app received and dropped without answering', () => {
  it('is sent again when it is a GET, and the app sees it more than once', async () => {
    await appAnswers();
    received.clear();
    const r = await sendTo('GET', '/drop');
    expect(r.status).toBeGreaterThanOrEqual(502);
    expect(received.get('GET')).toBeGreaterThan(1);
  });

  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
    it(`is never sent again when it is a ${method}: the app sees it once, the client gets the edge's 502`, async () => {
      await appAnswers();
      received.clear();
      const r = await sendTo(method, '/drop', '{"charge":"once"}');
      expect([r.status, r.text]).toEqual([502, 'bad gateway: the web process is not answering']);
      // every retry would have come within the request; a moment more for one that would come late
      await new Promise((res) => setTimeout(res, 300));
      expect(received.get(method)).toBe(1);
    });
  }

  it('leaves the other requests as they were: a POST the app answers gets its answer', async () => {
    await appAnswers();
    const r = await sendTo('POST', '/', '{}');
    expect([r.status, r.text]).toEqual([200, 'POST ok\n']);
  });
});
