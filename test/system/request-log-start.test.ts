/**
 * The request log shipped for real under `npm start` (issue 18 item 5), tried as a new user would: `npm start`'s
 * own processes, an http collector and a syslog listener on loopback, the project's destination saved with a
 * good test send, then requests to the environment's URL: their lines arrive over http, then over syslog (the
 * very next request after the change), keep arriving when the shipper process is SIGKILLed (npm start restarts
 * it; HAProxy's ring keeps the lines meanwhile), and go nowhere but the machine file once the destination is
 * removed. A shipper that stays away leaves HAProxy at rest: the ring's connection waits on npm start's socket.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { environmentHome } from '../../host/provider/sandbox';
import { processCpuNs } from '../../host/provider/usage';
import { useTestContext } from '../helpers/context';
import { type AppRepo, createEnvironment, createSharedAppRepo, runTaskOk } from '../helpers/deploy-fixtures';
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
import { processesMentioning, procStat } from '../helpers/processes';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { startSyslog, type SyslogListener } from '../helpers/syslog';
import { until as untilHolds } from '../helpers/until';

// npm start runs on this file's database: its worker registers the host (the file registers none of its own)
const t = useTestContext({ host: false });

let start: ChildProcess;
let out = '';
let dataDir: string;
let ports: NpmStartPorts;
let api: Agent;
let owners: Agent;
let repo: AppRepo;
let env: { id: string; port: number };
let project: { id: string; team_id: string };
let receiver: Receiver;
let syslog: SyslogListener;

const until = <T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, ms = 60_000) =>
  untilHolds(what, fn, { timeoutMs: ms, ignoreErrors: true, detail: () => out.slice(-4000) });

const AGENT = 'request-log-start "quoted" \\ agent';
async function visit(pathname: string): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${env.port}${pathname}`, { headers: { 'user-agent': AGENT } });
  await r.text();
  return r.status;
}

beforeAll(async () => {
  // the same keys as this file's context, so that its token and session are the started API's too
  dataDir = npmStartDataDir(t);
  ports = await npmStartPorts();

  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  repo = createSharedAppRepo();
  writeFileSync(repo.gate, '');
  repo.commit('v1');
  project = await createProject(t, team, { repository_url: repo.dir });
  const row = await createEnvironment(t, project, { name: 'production' });
  env = { id: row.id, port: row.port! };
  mkdirSync(environmentHome(dataDir, env.id), { recursive: true });
  const base = `http://127.0.0.1:${ports.api}/api/vc/v1`;
  api = new Agent(base).withBearer(await createAccessToken(t, owner, team));
  // the logs routes take a signed-in caller: this context's session, valid on the started API (same keys)
  const session = await sessionAgent(t, owner);
  owners = new Agent(base);
  for (const [k, v] of session.cookies) owners.cookies.set(k, v);
  owners.csrf = session.csrf;

  start = spawnNpmStart(
    await npmStartEnv(t, ports, dataDir, {
      // the collector and the syslog listener are on loopback
      OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
    }),
    (text) => {
      out += text;
    },
  );
  await untilRunning(start, () => out);
  receiver = await startReceiver(0, '/ingest');
  syslog = await startSyslog('udp');
}, 300_000);

afterAll(async () => {
  await stopNpmStart(start, dataDir);
  await receiver?.stop();
  await syslog?.stop();
  rmSync(dataDir, { recursive: true, force: true });
}, 120_000);

// wired by the lead with the HAProxy edge
describe('npm start ships the request log to the project destination', () => {
  it('deploys the app, which answers through the edge', async () => {
    await runTaskOk(t, api, `/environments/${env.id}/deploy`, undefined, 180_000);
    expect(await visit('/')).toBe(200);
  }, 200_000);

  it('sends the lines of requests to the environment over http (NDJSON) once the destination is saved', async () => {
    const saved = await owners.post(`/projects/${project.id}/logs`, {
      destination: { kind: 'http', name: 'collector', url: receiver.url },
    });
    expect(saved.status, saved.text).toBe(200);
    expect(saved.body.can_send).toBe(true);
    // as a new user does: a few requests right after the save, then wait for their lines
    for (let i = 0; i < 3; i++) expect(await visit(`/over-http/${i}?token=not-shipped`)).toBe(200);
    const lines = await until('the three request lines over http', async () => {
      const got = receiver.received
        .flatMap((r) => r.body.split('\n').filter(Boolean))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.type === 'request' && String(l.path).startsWith('/over-http/'));
      return got.length === 3 ? got : undefined;
    });
    expect(lines[0]).toMatchObject({
      environment_id: env.id,
      method: 'GET',
      status: 200,
      client_address: '127.0.0.1',
      user_agent: AGENT,
    });
    expect(typeof lines[0].bytes).toBe('number');
    expect(typeof lines[0].duration_ms).toBe('number');
    expect(Date.parse(String(lines[0].time))).toBeGreaterThan(0);
    expect(receiver.received.map((r) => r.body).join('')).not.toContain('not-shipped');
  }, 90_000);

  it('sends them as RFC 5424 syslog lines once the destination is a syslog listener', async () => {
    const saved = await owners.post(`/projects/${project.id}/logs`, {
      destination: { kind: 'syslog', name: 'listener', host: '127.0.0.1', port: syslog.port, protocol: 'udp' },
    });
    expect(saved.status, saved.text).toBe(200);
    expect(saved.body.can_send).toBe(true);
    // A changed destination is used for the next line (the shipper reads it at the save's notification, and
    // every second): the very request made after the answer goes over syslog, not to the collector.
    expect(await visit('/over-syslog')).toBe(200);
    const message = await until(
      'the next request line over syslog (within 5 s: the shipper flushes every second)',
      () => syslog.messages.find((m) => m.includes('"path":"/over-syslog"')),
      5_000,
    );
    expect(receiver.received.map((r) => r.body).join('')).not.toContain('/over-syslog');
    expect(message).toMatch(/^<\d+>1 \S+ \S+ edge - request \[vc@32473 environment_id="[0-9a-f-]{36}"\] \{/);
    const line = JSON.parse(message.slice(message.indexOf('{')));
    expect(line).toMatchObject({ environment_id: env.id, status: 200, user_agent: AGENT });
  }, 90_000);

  it('keeps the lines flowing when the shipper process is killed: npm start restarts it, the ring kept them', async () => {
    const pidFile = join(dataDir, 'run', 'shipper.pid');
    const first = Number(readFileSync(pidFile, 'utf8').trim());
    // npm start runs the shipper's bundle (processes/process-bundles.ts)
    expect(readFileSync(`/proc/${first}/cmdline`, 'utf8')).toMatch(/processes\/shipper-[0-9a-f]{16}\.mjs\0/);
    // it yields the CPU to HAProxy and the apps (niceness 5; everything else npm start runs has 0)
    expect([procStat(first)[16], procStat(start.pid!)[16]]).toEqual(['5', '0']);
    process.kill(first, 'SIGKILL');
    // HAProxy's connection stays open on the socket npm start holds (processes/request-log-socket.ts): the next
    // shipper is handed it and reads on
    await new Promise((r) => setTimeout(r, 1000));
    // requests while it is away: HAProxy's ring keeps their lines (the edge's control plane reads none)
    for (let i = 0; i < 3; i++) expect(await visit(`/while-shipper-away/${i}`)).toBe(200);
    const second = await until('the shipper restarted by npm start', () => {
      const pid = Number(readFileSync(pidFile, 'utf8').trim());
      return pid !== first && existsSync(`/proc/${pid}`) ? pid : undefined;
    });
    expect(out).toMatch(/The shipper process exited unexpectedly \(killed by SIGKILL\); restarting it/);
    // the next lines, through the new process
    expect(await visit('/after-shipper-restart')).toBe(200);
    await until('a line after the restart', () =>
      syslog.messages.some((m) => m.includes('"path":"/after-shipper-restart"')),
    );
    expect(existsSync(`/proc/${second}`)).toBe(true);
    // every line made while it was away arrived once, or is counted in a `dropped` line (none is lost unsaid)
    const lines = () => syslog.messages.map((m) => JSON.parse(m.slice(m.indexOf('{'))) as Record<string, unknown>);
    const away = () => lines().filter((l) => String(l.path).startsWith('/while-shipper-away/')).length;
    const dropped = () =>
      lines()
        .filter((l) => l.type === 'dropped')
        .reduce((n, l) => n + Number(l.dropped), 0);
    await untilHolds('the three lines arrived or counted', () => away() + dropped() === 3, {
      timeoutMs: 30_000,
      detail: () => `arrived ${away()}, dropped ${dropped()}\n${out.slice(-2000)}`,
    });
    expect(away()).toBe(3); // after the pause, the ring kept them all
  }, 90_000);

  it('sends nothing once the destination is removed; the machine file still gets the line', async () => {
    const saved = await owners.post(`/projects/${project.id}/logs`, { destination: null });
    expect(saved.status, saved.text).toBe(200);
    expect(await visit('/after-removal')).toBe(200);
    const file = join(dataDir, 'logs', env.id, `${new Date().toISOString().slice(0, 10)}.requests.ndjson`);
    await until(
      'the line in the machine file',
      () => existsSync(file) && readFileSync(file, 'utf8').includes('"path":"/after-removal"'),
    );
    await new Promise((r) => setTimeout(r, 2_500));
    expect(syslog.messages.some((m) => m.includes('/after-removal'))).toBe(false);
    expect(receiver.received.map((r) => r.body).join('')).not.toContain('/after-removal');
  }, 60_000);
});

/** The user name of a process's real uid (/proc/<pid>/status, /etc/passwd). */
function userOf(pid: string): string {
  const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1];
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.split(':')[2] === uid);
  return line ? line.split(':')[0] : uid;
}

describe("npm start's data plane runs unprivileged (edge/privileges.ts)", () => {
  it("HAProxy's workers run as haproxy and Varnish's cache as vcache; HAProxy's master alone as root", () => {
    const procs = processesMentioning(dataDir).map((p) => {
      const [pid, ...cmd] = p.split(' ');
      return { pid, cmd: cmd.join(' '), user: userOf(pid) };
    });
    const haproxy = procs.filter((p) => p.cmd.startsWith('/usr/sbin/haproxy'));
    const varnish = procs.filter((p) => p.cmd.startsWith('/usr/sbin/varnishd'));
    // a master and its worker each (a reload may leave an old worker finishing for a moment: haproxy too)
    expect(haproxy.map((p) => p.user).sort()).toEqual(expect.arrayContaining(['haproxy', 'root']));
    expect(haproxy.filter((p) => p.user === 'root')).toHaveLength(1);
    // Varnish's cache (the child of its manager) serves the requests
    const cache = varnish.filter((p) => varnish.some((m) => m.pid === procStat(p.pid)[1]));
    expect(cache.map((p) => p.user)).toEqual(['vcache']);
  });

  it("the control plane's sockets HAProxy's workers connect to are the haproxy group's; its secrets stay root's", () => {
    const gid = readFileSync('/etc/group', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('haproxy:'))!
      .split(':')[2];
    const mode = (file: string) => statSync(join(dataDir, 'edge', file)).mode & 0o777;
    const group = (file: string) => String(statSync(join(dataDir, 'edge', file)).gid);
    expect(mode('.').toString(8)).toBe('711');
    for (const socket of ['request-log/reader.sock', 'auth/checker.sock']) {
      expect([mode(socket).toString(8), group(socket)]).toEqual(['660', gid]);
      expect([mode(join(socket, '..')).toString(8), group(join(socket, '..'))]).toEqual(['710', gid]);
    }
    for (const secret of ['auth/password-key.cfg', 'auth/passwords.map'])
      expect([mode(secret).toString(8), statSync(join(dataDir, 'edge', secret)).uid]).toEqual(['600', 0]);
    expect(mode('haproxy').toString(8)).toBe('700');
    expect(mode('certs').toString(8)).toBe('700');
  });
});

describe('a second npm start on the same DATA_DIR', () => {
  it("stops at once saying which npm start holds it, and leaves the first one's edge serving", async () => {
    const dataPlane = () =>
      processesMentioning(dataDir)
        .filter((p) => /^\d+ \/usr\/sbin\/(haproxy|varnishd) /.test(p))
        .map((p) => p.split(' ')[0])
        .sort();
    const before = dataPlane();
    expect(before.length).toBeGreaterThanOrEqual(4);
    let second = '';
    const again = spawnNpmStart(
      await npmStartEnv(t, ports, dataDir, { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' }),
      (text) => {
        second += text;
      },
    );
    const code = await new Promise<number | null>((resolve) => again.once('exit', resolve));
    expect(code, second).toBe(1);
    expect(second).toMatch(/Another npm start runs with DATA_DIR \S+ \(pid \d+\); nothing was started or stopped/);
    expect(second).toContain(dataDir);
    expect(second).not.toContain('Stopped the edge');
    expect(dataPlane()).toEqual(before);
    expect(await visit('/after-second-start')).toBe(200);
  }, 120_000);
});

/** CPU seconds (user and system) the processes have used so far. */
const cpuSeconds = (pids: string[]) => pids.reduce((s, pid) => s + processCpuNs(pid) / 1e9, 0);

describe('a shipper that stays away (npm start gave up on it)', () => {
  it("leaves HAProxy at rest: the ring's connection waits on the socket npm start holds; tenants are served", async () => {
    const pidFile = join(dataDir, 'run', 'shipper.pid');
    const livePid = () => {
      const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : 0;
      return pid && existsSync(`/proc/${pid}`) ? pid : undefined;
    };
    // a crash loop: killed each time it is back, until supervision gives up on it
    let last = 0;
    for (;;) {
      const pid = await until(
        'a shipper process to kill, or npm start giving up',
        () => {
          if (out.includes('Giving up on the shipper process')) return -1;
          const live = livePid();
          return live !== last && live;
        },
        60_000,
      );
      if (pid === -1) break;
      process.kill(pid, 'SIGKILL');
      last = pid;
    }
    expect(out).toMatch(/Giving up on the shipper process: it exited \d+ times within 60 s/);
    expect(await visit('/while-no-shipper')).toBe(200);
    // HAProxy's workers, with nothing reading the request log: before this, a ring reconnecting to a socket no
    // one listened on took ~95 % of a core (thousands of failed connects a second)
    const workers = processesMentioning(dataDir)
      .filter((p) => /^\d+ \/usr\/sbin\/haproxy /.test(p))
      .map((p) => p.split(' ')[0])
      .filter((pid) => userOf(pid) === 'haproxy');
    expect(workers.length).toBeGreaterThan(0);
    const before = cpuSeconds(workers);
    await new Promise((r) => setTimeout(r, 4000));
    const used = cpuSeconds(workers) - before;
    expect(used, `HAProxy's workers used ${used.toFixed(2)} s of CPU in 4 s with no shipper`).toBeLessThan(1);
    expect(await visit('/still-no-shipper')).toBe(200);
  }, 150_000);
});
