/**
 * The edge behind a trusted proxy (TRUST_PROXY_HOPS=1): the client address the rules see is the one that
 * proxy put last in X-Forwarded-For, and HSTS goes on answers to requests it says came over HTTPS
 * (X-Forwarded-Proto), never on plain HTTP ones. The app gets X-Forwarded-For (the chain, then the edge's
 * peer), -Proto and -Host. The app here is a loopback server the route points at (no deploy needed).
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { createProject, createTeam, createUser } from '../helpers/fixtures';
import { awaitEdges } from '../../db/queries/edge-routes';

const t = useTestContext({ edge: true, env: { TRUST_PROXY_HOPS: '1' } });
let app: http.Server;
let env: { id: string; port: number; project_id: string };

beforeAll(async () => {
  // echoes the headers the edge sent
  app = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(req.headers));
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  const appPort = (app.address() as { port: number }).port;
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  const project = await createProject(t, team);
  env = await createEnvironment(t, project);
  await t.deps.knex('edge_routes').insert({
    environment_id: env.id,
    upstream_host: '127.0.0.1',
    upstream_port: appPort,
    upstreams: JSON.stringify([{ id: '1', host: '127.0.0.1', port: appPort }]),
  });
  await t.deps.knex('project_edges').insert({
    project_id: project.id,
    blocked_addresses: JSON.stringify(['203.0.113.0/24']),
    hsts: JSON.stringify({ max_age: 600, include_subdomains: false, preload: false }),
  });
  await awaitEdges(t.deps.knex);
});
afterAll(() => new Promise((r) => app.close(r)));

function get(
  headers: Record<string, string>,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: env.port, path: '/', headers, agent: false }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      })
      .on('error', reject);
  });
}

describe('the edge behind a trusted proxy (TRUST_PROXY_HOPS=1)', () => {
  it('judges the address the proxy reports: blocked there, let through otherwise', async () => {
    expect((await get({ 'x-forwarded-for': '198.51.100.7, 203.0.113.9' })).status).toBe(403);
    // the proxy's own hop is the last one: an address before it is the client's claim, not believed
    expect((await get({ 'x-forwarded-for': '203.0.113.9, 198.51.100.7' })).status).toBe(200);
    expect((await get({})).status).toBe(200);
  });

  it('sends HSTS on answers to requests the proxy got over HTTPS only', async () => {
    const https = await get({ 'x-forwarded-for': '198.51.100.7', 'x-forwarded-proto': 'https' });
    expect(https.headers['strict-transport-security']).toBe('max-age=600');
    const plain = await get({ 'x-forwarded-for': '198.51.100.7', 'x-forwarded-proto': 'http' });
    expect(plain.headers['strict-transport-security']).toBeUndefined();
    expect((await get({})).headers['strict-transport-security']).toBeUndefined();
  });

  it('tells the app who asked and how: X-Forwarded-For, -Proto and -Host', async () => {
    const seen = JSON.parse(
      (await get({ 'x-forwarded-for': '198.51.100.7', 'x-forwarded-proto': 'https', host: 'shop.example.test' })).body,
    );
    expect(seen['x-forwarded-for']).toBe('198.51.100.7, 127.0.0.1');
    expect(seen['x-forwarded-proto']).toBe('https');
    expect(seen['x-forwarded-host']).toBe('shop.example.test');
    const bare = JSON.parse((await get({})).body);
    expect(bare['x-forwarded-for']).toBe('127.0.0.1');
    expect(bare['x-forwarded-proto']).toBe('http');
  });
});
