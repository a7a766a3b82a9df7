import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkOutboundHost, guardedLookup, outboundRequest, OutboundRefused } from '../../../host/outbound';
import { parseAllowList } from '../../../system/allow-list';
import { loadConfig } from '../../../system/config';

const none = { outboundAllowedHosts: [] as string[] };
const allow = (...entries: string[]) => ({ outboundAllowedHosts: entries });

let target: http.Server;
let targetPort: number;
let redirector: http.Server;
let redirectorPort: number;
let targetHits = 0;

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

beforeAll(async () => {
  target = http.createServer((_req, res) => {
    targetHits += 1;
    res.end('internal');
  });
  targetPort = await listen(target);
  redirector = http.createServer((req, res) => {
    res.writeHead(302, {
      location: req.url === '/same' ? `http://localhost:${redirectorPort}/end` : `http://127.0.0.1:${targetPort}/`,
    });
    res.end();
  });
  redirectorPort = await listen(redirector);
});

afterAll(async () => {
  await new Promise((r) => target.close(r));
  await new Promise((r) => redirector.close(r));
});

describe('checkOutboundHost', () => {
  it('refuses internal addresses of every kind, however written', async () => {
    const internal = [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '[::1]',
      '::',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      '64:ff9b::7f00:1',
      'localhost',
    ];
    for (const host of internal) {
      await expect(checkOutboundHost(host, none), host).rejects.toBeInstanceOf(OutboundRefused);
    }
  });

  it('lets public unicast addresses through, and what the allow list names', async () => {
    expect(await checkOutboundHost('93.184.215.14', none)).toEqual(['93.184.215.14']);
    expect(await checkOutboundHost('2606:4700::1111', none)).toEqual(['2606:4700::1111']);
    expect(await checkOutboundHost('10.1.2.3', allow('10.0.0.0/8'))).toEqual(['10.1.2.3']);
    expect(await checkOutboundHost('::ffff:10.1.2.3', allow('10.0.0.0/8'))).toEqual(['::ffff:a01:203']);
    expect(await checkOutboundHost('127.0.0.1', allow('127.0.0.1'))).toEqual(['127.0.0.1']);
    expect((await checkOutboundHost('localhost', allow('LOCALHOST'))).length).toBeGreaterThan(0);
    await expect(checkOutboundHost('127.0.0.2', allow('127.0.0.1'))).rejects.toBeInstanceOf(OutboundRefused);
  });

  it('refuses a name that does not resolve and one that is not a host name', async () => {
    await expect(checkOutboundHost('no-such-host.invalid', none)).rejects.toMatchObject({ reason: 'unresolvable' });
    await expect(checkOutboundHost('-oProxyCommand=x', none)).rejects.toMatchObject({ reason: 'invalid_host' });
  });
});

describe('OUTBOUND_ALLOWED_HOSTS', () => {
  it('takes host names, addresses and CIDRs, and refuses anything else at start', () => {
    expect(loadConfig({ OUTBOUND_ALLOWED_HOSTS: ' git.internal , 10.0.0.0/8,::1 ' }).outboundAllowedHosts).toEqual([
      'git.internal',
      '10.0.0.0/8',
      '::1',
    ]);
    expect(parseAllowList(['git.internal', '10.0.0.0/8', '[::1]']).cidrs).toHaveLength(2);
    expect(() => loadConfig({ OUTBOUND_ALLOWED_HOSTS: '10.0.0.0/99' })).toThrow(/OUTBOUND_ALLOWED_HOSTS/);
    expect(() => loadConfig({ OUTBOUND_ALLOWED_HOSTS: 'http://x' })).toThrow(/OUTBOUND_ALLOWED_HOSTS/);
  });
});

describe('outboundRequest (the guarded fetch)', () => {
  it('refuses a loopback target before connecting', async () => {
    await expect(outboundRequest(`http://127.0.0.1:${targetPort}/`, {}, none)).rejects.toBeInstanceOf(OutboundRefused);
    await expect(outboundRequest(`http://localhost:${targetPort}/`, {}, none)).rejects.toBeInstanceOf(OutboundRefused);
    expect(targetHits).toBe(0);
  });

  it('checks every redirect: an allowed server cannot send it to a loopback one', async () => {
    await expect(outboundRequest(`http://localhost:${redirectorPort}/`, {}, allow('localhost'))).rejects.toBeInstanceOf(
      OutboundRefused,
    );
    expect(targetHits).toBe(0);
    const same = await outboundRequest(
      `http://localhost:${redirectorPort}/same`,
      { maxRedirects: 1 },
      allow('localhost'),
    );
    expect(same.status).toBe(302);
    const allowed = await outboundRequest(`http://localhost:${redirectorPort}/`, {}, allow('localhost', '127.0.0.1'));
    expect(allowed.body.toString()).toBe('internal');
    expect(targetHits).toBe(1);
  });

  it("checks inside the connection's own DNS lookup (a name that resolves to loopback at connect time)", async () => {
    const lookup = guardedLookup(none);
    const err = await new Promise<Error | null>((resolve) => {
      const req = http.get({ host: 'localhost', port: targetPort, path: '/', lookup, agent: false }, () =>
        resolve(null),
      );
      req.on('error', resolve);
    });
    expect(err).toBeInstanceOf(OutboundRefused);
    expect(targetHits).toBe(1);
  });

  it('with keep-alive agents, sends on the connection it kept; one the server closes as it is reused is sent again on a new one', async () => {
    // each request: the connection it came on; the second on the first connection is dropped unanswered (a server
    // whose idle timeout closed it as the request went out)
    const seen: number[] = [];
    const connections = new Map<unknown, number>();
    const server = http.createServer((req, res) => {
      if (!connections.has(req.socket)) connections.set(req.socket, connections.size + 1);
      const conn = connections.get(req.socket)!;
      seen.push(conn);
      if (conn === 1 && seen.filter((c) => c === 1).length === 2) return req.socket.destroy();
      res.end(`ok ${seen.length}`);
    });
    const port = await listen(server);
    const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
    try {
      const post = () =>
        outboundRequest(
          `http://127.0.0.1:${port}/ingest`,
          { method: 'POST', body: [Buffer.from('line\n')], agents },
          allow('127.0.0.1'),
        );
      expect((await post()).body.toString()).toBe('ok 1');
      expect((await post()).body.toString()).toBe('ok 3');
      expect(seen).toEqual([1, 1, 2]);
      // without agents: a connection each
      const before = connections.size;
      await outboundRequest(`http://127.0.0.1:${port}/`, {}, allow('127.0.0.1'));
      await outboundRequest(`http://127.0.0.1:${port}/`, {}, allow('127.0.0.1'));
      expect(connections.size).toBe(before + 2);
      // a refused address is refused with an agent too
      await expect(outboundRequest(`http://127.0.0.1:${port}/`, { agents }, none)).rejects.toBeInstanceOf(
        OutboundRefused,
      );
    } finally {
      agents.http.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
