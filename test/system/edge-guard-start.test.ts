/**
 * The edge guarded, through `npm start`'s own processes (issue 28, items 3, 4 and 6), one `npm start` shared by
 * the cases, in order:
 * - a forged X-Forwarded-Proto (and -For, -Host) through the CDN path never reaches the app, nor is cached for
 *   others; a client naming those headers in `Connection:` does not make the CDN tier drop the edge's;
 * - a slowloris from one address (127.0.0.5: many half-sent requests, several times the per-address limit)
 *   while another address is served: the connections over the limit are closed unanswered, the other address
 *   gets its 200s;
 * - the supervisor SIGKILLed: what it started stops (its children, HAProxy, Varnish, Temporal, the tenant's web
 *   process); then a second `npm start` on the same DATA_DIR and ports comes up and serves;
 * - a clean stop removes the sandbox's network namespace; a port another program holds fails the start.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { environmentHome } from '../../host/provider/sandbox';
import { netnsName } from '../../host/provider/sandbox-network';
import { useTestContext } from '../helpers/context';
import {
  type AppRepo,
  commitServer,
  createEnvironment,
  createSharedAppRepo,
  runTaskOk,
} from '../helpers/deploy-fixtures';
import { createAccessToken, createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import { Agent } from '../helpers/http';
import {
  type NpmStartPorts,
  npmStartDataDir,
  npmStartEnv,
  npmStartPorts,
  spawnNpmStart,
  stopNpmStart,
  untilRunning,
} from '../helpers/npm-start';
import { processesMentioning, tenantProcessesOfPorts } from '../helpers/processes';
import { until as untilHolds } from '../helpers/until';

// npm start runs on this file's database: its worker registers the host (the file registers none of its own)
const t = useTestContext({ host: false });

/** Says what the edge told it (X-Forwarded-*), with a counter: a cached answer repeats its number. */
const ECHO_APP = `
const http = require('node:http');
let n = 0;
http.createServer((req, res) => {
  if (req.url === '/healthz') { res.writeHead(200); return res.end('ok'); }
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=600' });
  res.end(JSON.stringify({
    n: ++n,
    proto: req.headers['x-forwarded-proto'] ?? null,
    for: req.headers['x-forwarded-for'] ?? null,
    host: req.headers['x-forwarded-host'] ?? null,
    forwarded: req.headers['forwarded'] ?? null,
  }));
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

let start: ChildProcess | undefined;
let out = '';
let dataDir: string;
let ports: NpmStartPorts;
let startEnv: NodeJS.ProcessEnv;
let api: Agent;
let owners: Agent;
let repo: AppRepo;
let env: { id: string; port: number };

const until = <T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, ms = 60_000) =>
  untilHolds(what, fn, { timeoutMs: ms, ignoreErrors: true, detail: () => out.slice(-4000) });

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request on a connection of its own, with exactly these headers (from `localAddress` when given). */
function request(pathname: string, headers: Record<string, string> = {}, localAddress?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: env.port, path: pathname, headers, agent: false, localAddress }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      })
      .on('error', reject);
  });
}

beforeAll(async () => {
  dataDir = npmStartDataDir(t);
  ports = await npmStartPorts();
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  repo = createSharedAppRepo();
  repo.commit('v1');
  commitServer(repo, ECHO_APP, 'echo');
  const project = await createProject(t, team, { repository_url: repo.dir });
  const row = await createEnvironment(t, project, { name: 'production' });
  env = { id: row.id, port: row.port! };
  mkdirSync(environmentHome(dataDir, env.id), { recursive: true });
  const base = `http://127.0.0.1:${ports.api}/api/vc/v1`;
  api = new Agent(base).withBearer(await createAccessToken(t, owner, team));
  const session = await sessionAgent(t, owner);
  owners = new Agent(base);
  for (const [k, v] of session.cookies) owners.cookies.set(k, v);
  owners.csrf = session.csrf;
  startEnv = await npmStartEnv(t, ports, dataDir);
  start = spawnNpmStart(startEnv, (text) => {
    out += text;
  });
  await untilRunning(start, () => out);
}, 300_000);

afterAll(async () => {
  await stopNpmStart(start, dataDir);
  rmSync(dataDir, { recursive: true, force: true });
}, 120_000);

describe('the edge under npm start', () => {
  it('deploys the app, which answers through the edge with the CDN on', async () => {
    await runTaskOk(t, api, `/environments/${env.id}/deploy`, undefined, 180_000);
    const cdn = await owners.patch(`/environments/${env.id}/cdn`, { enabled: true });
    expect(cdn.status, cdn.text).toBe(200);
    let probe = 0;
    await until('the CDN tier in front of the app', async () => {
      const r = await request(`/probe-${probe++}`);
      return r.status === 200 && r.headers['x-cache'] === 'MISS';
    });
  }, 240_000);

  it('a forged X-Forwarded-Proto, -For and -Host never reach the app, nor the CDN entry others get', async () => {
    const forged = await request('/forged', {
      'x-forwarded-proto': 'javascript://evil.example/',
      'x-forwarded-for': '203.0.113.66',
      'x-forwarded-host': 'evil.example',
      forwarded: 'for=203.0.113.66;proto=https',
    });
    expect(forged.status).toBe(200);
    expect(forged.headers['x-cache']).toBe('MISS');
    const seen = JSON.parse(forged.body);
    expect(seen).toMatchObject({
      proto: 'http',
      for: '127.0.0.1',
      host: `127.0.0.1:${env.port}`,
      forwarded: null,
    });
    // another client gets the cached answer: the edge's headers, never the forger's
    const other = await request('/forged');
    expect(other.headers['x-cache']).toBe('HIT');
    expect(JSON.parse(other.body)).toEqual(seen);
    expect(other.body).not.toContain('evil');
  });

  it("a client naming the edge's headers in Connection: does not make the CDN tier drop them", async () => {
    const named = await request('/named', {
      connection: 'close, X-Forwarded-Proto, X-Forwarded-Host, X-Forwarded-For',
      'x-forwarded-proto': 'javascript://evil.example/',
    });
    expect(named.status).toBe(200);
    expect(named.headers['x-cache']).toBe('MISS');
    expect(JSON.parse(named.body)).toMatchObject({ proto: 'http', for: '127.0.0.1', host: `127.0.0.1:${env.port}` });
  });

  it('a slowloris from one address: its connections over the limit are closed unanswered, another address is served', async () => {
    // EDGE_CONNECTIONS_PER_ADDRESS (100) and EDGE_CONNECTION_RATE_PER_ADDRESS (200 per 10 s) at their defaults
    const ATTACK = 600;
    const attacker = Array.from({ length: ATTACK }, () => {
      const s = net.connect({ host: '127.0.0.1', port: env.port, localAddress: '127.0.0.5' });
      const state = { socket: s, bytes: 0, closed: false };
      s.on('connect', () => s.write('GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: '));
      s.on('data', (d) => (state.bytes += d.length));
      s.on('error', () => undefined);
      s.on('close', () => (state.closed = true));
      return state;
    });
    try {
      // a connection over a limit is closed as it comes, before any answer (no 429, no 408)
      await until('the connections over the per-address limit closed unanswered', () => {
        const unanswered = attacker.filter((a) => a.closed && a.bytes === 0).length;
        return unanswered >= ATTACK - 100 && unanswered;
      });
      const held = attacker.filter((a) => !a.closed).length;
      expect(held).toBeLessThanOrEqual(100);
      // while the attacker holds what it may, another address gets every answer
      for (let i = 0; i < 20; i++) {
        const r = await request(`/served-${i}`, {}, '127.0.0.1');
        expect(r.status).toBe(200);
      }
    } finally {
      for (const a of attacker) a.socket.destroy();
    }
  }, 120_000);
});

/** The tenant's processes (its uid), not zombies. */
const tenantProcesses = () => tenantProcessesOfPorts(env.port, env.port);

/** What runs for this DATA_DIR (zombies, dead already, not counted). */
function systemProcesses(): string[] {
  return processesMentioning(dataDir).filter((p) => {
    try {
      return !/^State:\s+[ZX]/m.test(readFileSync(`/proc/${p.split(' ')[0]}/status`, 'utf8'));
    } catch {
      return false;
    }
  });
}

describe("npm start's supervisor SIGKILLed", () => {
  it("stops the console's processes and the edge's HAProxy and Varnish; a second start on the same ports serves", async () => {
    const supervisor = Number(readFileSync(path.join(dataDir, 'run', 'start.pid'), 'utf8').trim());
    const before = systemProcesses();
    expect(before.some((p) => /\/usr\/sbin\/haproxy /.test(p))).toBe(true);
    expect(before.some((p) => /\/usr\/sbin\/varnishd /.test(p))).toBe(true);
    expect(tenantProcesses().length).toBeGreaterThan(0);

    process.kill(supervisor, 'SIGKILL');
    await until('npm start gone', () => start!.exitCode !== null || start!.signalCode !== null);
    // the console's processes, the edge's data plane (HAProxy, Varnish), Temporal and the tenant's web process
    const left = () => [...systemProcesses(), ...tenantProcesses()];
    await until('nothing of the console, the edge and the tenant still runs', () => left().length === 0, 90_000).catch(
      (err) => {
        throw new Error(`${(err as Error).message}\nstill running:\n${[...new Set(left())].join('\n')}`);
      },
    );

    // the same DATA_DIR and ports: nothing of the first holds them
    out = '';
    start = spawnNpmStart(startEnv, (text) => {
      out += text;
    });
    await untilRunning(start, () => out, ' again');
    const r = await until('the app through the second start', async () => {
      const a = await request('/after-restart');
      return a.status === 200 && a;
    });
    expect(JSON.parse(r.body).proto).toBe('http');
  }, 420_000);

  it('a clean stop removes the sandbox network it made; a port another program holds fails the start, naming it', async () => {
    const netns = `/run/netns/${netnsName(env.port)}`;
    expect(existsSync(netns)).toBe(true);
    await stopNpmStart(start, dataDir);
    start = undefined;
    expect(existsSync(netns)).toBe(false);
    const squatter = net.createServer();
    await new Promise<void>((r) => squatter.listen(ports.edge, '127.0.0.1', r));
    try {
      let third = '';
      const again = spawnNpmStart(startEnv, (text) => {
        third += text;
      });
      const code = await new Promise<number | null>((resolve) => again.once('exit', resolve));
      expect(code, third).not.toBe(0);
      expect(third).toContain(`EDGE_PORT 127.0.0.1:${ports.edge}`);
      expect(third).not.toContain('Hosting Console is running.');
    } finally {
      await new Promise((r) => squatter.close(r));
    }
  }, 180_000);
});
