/**
 * A WebSocket through the edge (HAProxy): the upgrade reaches the app (after the rules), the 101 comes back,
 * and bytes flow both ways on the connection. The app is a loopback server the route points at.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/until';
import { useTestContext } from '../helpers/context';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { createProject, createTeam, createUser } from '../helpers/fixtures';
import { awaitEdges } from '../../db/queries/edge-routes';

const t = useTestContext({ edge: true });
let app: http.Server;
const sockets = new Set<net.Socket>();
let env: { id: string; port: number };

beforeAll(async () => {
  app = http.createServer((_req, res) => res.end('plain\n'));
  // answers the upgrade, then echoes every byte in upper case
  app.on('upgrade', (req, socket: net.Socket) => {
    sockets.add(socket);
    const accept = createHash('sha1')
      .update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
      .digest('base64');
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        `Sec-WebSocket-Accept: ${accept}\r\nX-Seen-For: ${req.headers['x-forwarded-for']}\r\n\r\n`,
    );
    socket.on('data', (c) => socket.write(c.toString().toUpperCase()));
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  const appPort = (app.address() as { port: number }).port;
  const team = await createTeam(t, await createUser(t));
  env = await createEnvironment(t, await createProject(t, team));
  await t.deps.knex('edge_routes').insert({
    environment_id: env.id,
    upstreams: JSON.stringify([{ id: '1', host: '127.0.0.1', port: appPort }]),
  });
  await awaitEdges(t.deps.knex);
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => app.close(r));
});

describe('a WebSocket through the edge', () => {
  it('is upgraded by the app and carries bytes both ways', async () => {
    const s = net.connect(env.port, '127.0.0.1');
    let got = '';
    s.on('data', (c) => (got += c));
    await new Promise((r) => s.once('connect', r));
    s.write(
      'GET /chat HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
    );
    const wait = { timeoutMs: 5000, intervalMs: 20 };
    await until('the answer to the upgrade', () => got.includes('\r\n\r\n'), wait);
    expect(got).toMatch(/^HTTP\/1\.1 101 /);
    expect(got.toLowerCase()).toContain('x-seen-for: 127.0.0.1');
    got = '';
    s.write('hello over the tunnel');
    await until('the echo through the tunnel', () => got === 'HELLO OVER THE TUNNEL', wait);
    expect(got).toBe('HELLO OVER THE TUNNEL');
    s.destroy();
  });
});
