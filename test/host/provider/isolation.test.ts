/**
 * Tenant isolation, tested as an attacker would try it, through real deploys on a real worker process (whose
 * environment holds DATABASE_URL, as in production): one team's build step and web process try to read the
 * worker's environment, the console's secrets, another environment's release, HOME and web.log, to connect
 * to the console's PostgreSQL (TCP and unix socket), Redis, API and Temporal, to the host's other addresses and
 * to another environment's web process. Each probe prints a LEAK (or OPEN) line only when it succeeds; the
 * tests assert that none appears while each probe's CLOSED line (it ran) does, and that the host's name
 * servers and the database services server at its gateway (what an environment needs) stay reachable. That
 * server answers, but refuses a login without the password, with a wrong superuser password, or as another
 * environment's role (REFUSED lines: the server said so).
 */
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceDatabase, dropServiceDatabase } from '../../../host/pg-server';
import { environmentDir, environmentHome, jailAddresses, sandboxMode, tenantUid } from '../../../host/provider/sandbox';
import { useTestContext } from '../../helpers/context';
import { createDeployWorld, fetchEnvironment, taskLog, waitForTask } from '../../helpers/deploy-fixtures';
import { spawnSystemProcess, stopChildren } from '../../helpers/processes';

const t = useTestContext({ edge: true });
const children: ChildProcess[] = [];
let victim: Awaited<ReturnType<typeof createDeployWorld>>;
let attacker: Awaited<ReturnType<typeof createDeployWorld>>;
let hostService: net.Server;
const stamp = `vc-isolation-${process.pid}-${Date.now().toString(36)}`;
const hostTmpFile = path.join('/tmp', stamp);
const hostUsrFile = path.join('/usr/local', stamp);

/** Prints OPEN-<name> for every target it can connect to, CLOSED-<name> for the others. */
const PROBE_JS = `
const net = require('node:net');
const [label, ...targets] = process.argv.slice(2);
let left = targets.length;
for (const target of targets) {
  const [name, where] = target.split('=');
  const i = where.lastIndexOf(':');
  const opts = where.startsWith('unix:') ? { path: where.slice(5) } : { host: where.slice(0, i), port: Number(where.slice(i + 1)) };
  const s = net.connect(opts);
  let done = false;
  const end = (ok) => {
    if (done) return;
    done = true;
    s.destroy();
    console.log(label + ':' + (ok ? 'OPEN-' : 'CLOSED-') + name);
    if (--left === 0) process.exit(0);
  };
  s.setTimeout(1500, () => end(false));
  s.on('connect', () => end(true));
  s.on('error', () => end(false));
}
`;

const SERVER_JS = `
const http = require('node:http');
const { execFileSync } = require('node:child_process');
http.createServer((req, res) => {
  if (req.url === '/healthz') { res.writeHead(200); return res.end('ok'); }
  if (req.url === '/probe') {
    let out;
    try { out = execFileSync('sh', ['attack.sh', 'web'], { cwd: __dirname, encoding: 'utf8', timeout: 30000 }); }
    catch (e) { out = String(e.stdout) + '\\nERROR ' + e.message; }
    res.writeHead(200, { 'content-type': 'text/plain' });
    return res.end(out);
  }
  res.writeHead(200); res.end('attacker');
}).listen(Number(process.env.PORT));
`;

/** The PostgreSQL logins the attacker tries at the services server: each must be refused by the server. */
let logins: Record<string, string> = {};
const otherService = { database: `vc_iso_${process.pid}`, role: `vc_iso_${process.pid}`, password: `pw-${Date.now()}` };

function attackScript(v: Record<string, string>, targets: string[]): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return `#!/bin/sh
L=$1
say() { echo "$L:$1"; }
say "UID=$(id -u)"
say "HOME=$HOME"
say "PIDS=$(ls -d /proc/[0-9]* | wc -l)"
for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null; done | grep -q '^DATABASE_URL=' && say LEAK-environ
[ -n "$DATABASE_URL" ] && say LEAK-ownenv
cat ${q(v.secrets)} >/dev/null 2>&1 && say LEAK-secrets
cat ${q(v.victimVersion)} >/dev/null 2>&1 && say LEAK-release
cat ${q(v.victimWebLog)} >/dev/null 2>&1 && say LEAK-weblog
cat ${q(v.victimSecret)} >/dev/null 2>&1 && say LEAK-home
cat ${q(v.victimState)} >/dev/null 2>&1 && say LEAK-state
ls ${q(v.mirrors)} >/dev/null 2>&1 && say LEAK-mirrors
echo x > ${q(hostTmpFile)} 2>/dev/null
echo x > ${q(hostUsrFile)} 2>/dev/null && say LEAK-rootfs
echo mine > "$HOME/own-$L" && say WROTE-home
node probe.js "$L" ${targets.map(q).join(' ')}
pgtry() {
  out=$(env -u PGPASSWORD PGCONNECT_TIMEOUT=10 psql -w "$2" -c 'select 1' 2>&1) && say LEAK-pg-$1
  echo "$out" | grep -Eq 'password authentication failed|no password supplied' && say REFUSED-pg-$1 || echo "$L:pg-$1: $out"
}
${Object.entries(logins)
  .map(([name, conninfo]) => `pgtry ${name} ${q(conninfo)}`)
  .join('\n')}
say DONE
`;
}

function git(dir: string, args: string[]): string {
  return execFileSync('git', args, { cwd: dir, encoding: 'utf8' }).trim();
}

async function deploy(w: typeof victim) {
  const res = await w.api.post(`/environments/${w.environment.id}/deploy`);
  expect(res.status, res.text).toBe(202);
  return waitForTask(t, w.api, res.body.id, { timeoutMs: 90_000 });
}

function hostAddress(): string | null {
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return null;
}

let targets: string[];
/** What an environment needs and may reach: the host's name servers (when they are not on its loopback). */
let allowed: string[];
/** The attacker's deploy task log: its build step's and its deploy step's output. */
let buildLog: string;

beforeAll(async () => {
  children.push(spawnSystemProcess(t, 'processes/worker.ts'));
  // A server of the host on every address (as sshd or a Temporal frontend in a container would be).
  hostService = net.createServer((s) => s.end());
  await new Promise<void>((r) => hostService.listen(0, '0.0.0.0', r));

  victim = await createDeployWorld(t);
  writeFileSync(path.join(victim.repo.home, 'secret.txt'), 'the victim team keeps this\n');
  const v = await deploy(victim);
  expect(v.status, v.error ?? '').toBe('succeeded');

  attacker = await createDeployWorld(t);
  const victimEnvDir = environmentDir(t.dataDir, victim.environment.id);
  const webLog = readFileSync(path.join(victimEnvDir, 'web.log'), 'utf8');
  const internalPort = Number(/on internal port (\d+)/.exec(webLog)![1]);
  const namespaces = sandboxMode().mode === 'namespaces';
  const victimAddress = namespaces ? jailAddresses(victim.environment.port).env : '127.0.0.1';
  const gateway = namespaces ? jailAddresses(attacker.environment.port).host : '127.0.0.1';
  const pg = new URL(t.databaseUrl);
  const api = new URL(t.baseUrl);
  const servicePort = (hostService.address() as net.AddressInfo).port;
  targets = [
    `pgtcp=${pg.hostname}:${pg.port || 5432}`,
    ...(existsSync('/var/run/postgresql/.s.PGSQL.5432') ? ['pgsock=unix:/var/run/postgresql/.s.PGSQL.5432'] : []),
    'redis=127.0.0.1:6379',
    `api=${api.hostname}:${api.port}`,
    `temporal=${t.config.temporalAddress}`,
    `gateway=${gateway}:${servicePort}`,
    ...(hostAddress() ? [`hostaddr=${hostAddress()}:${servicePort}`] : []),
    `victimweb=${victimAddress}:${internalPort}`,
    `victimweblo=127.0.0.1:${internalPort}`,
    `victimproxy=127.0.0.1:${victim.environment.port}`,
  ];
  const resolver = /^\s*nameserver\s+(\d+\.\d+\.\d+\.\d+)\s*$/m.exec(readFileSync('/etc/resolv.conf', 'utf8'))?.[1];
  allowed = resolver && !resolver.startsWith('127.') ? [`resolver=${resolver}:53`] : [];
  // The database services server (password auth), at the gateway: it answers, and refuses these logins.
  const services = new URL(t.config.servicesDatabaseUrl!);
  await createServiceDatabase(t.config, otherService);
  if (namespaces) {
    targets.push(`gatewaypg=${gateway}:${pg.port || 5432}`);
    allowed.push(`services=${gateway}:${services.port}`);
    const at = `host=${gateway} port=${services.port}`;
    logins = {
      nopassword: `${at} user=postgres dbname=postgres`,
      wrongsuper: `${at} user=postgres password=wrong-${Date.now()} dbname=postgres`,
      otherrole: `${at} user=${otherService.role} dbname=${otherService.database}`,
      otherrolewrong: `${at} user=${otherService.role} password=wrong dbname=${otherService.database}`,
    };
  }
  const release = v.result.release_id as string;
  const files = {
    secrets: path.join(t.dataDir, 'secrets', 'token-hmac-key.json'),
    victimVersion: path.join(victimEnvDir, 'releases', release, 'VERSION'),
    victimWebLog: path.join(victimEnvDir, 'web.log'),
    victimSecret: path.join(victim.repo.home, 'secret.txt'),
    victimState: path.join(victimEnvDir, 'current.json'),
    mirrors: path.join(t.dataDir, 'git-mirrors'),
  };
  // What the attacks aim at exists, and the worker can read it: a missing LEAK line means a refusal.
  for (const f of Object.values(files)) expect(existsSync(f), f).toBe(true);

  const dir = attacker.repo.dir;
  writeFileSync(path.join(dir, 'attack.sh'), attackScript(files, [...targets, ...allowed]));
  writeFileSync(path.join(dir, 'probe.js'), PROBE_JS);
  writeFileSync(path.join(dir, 'server.js'), SERVER_JS);
  writeFileSync(
    path.join(dir, 'service.yaml'),
    'build: ["sh attack.sh build"]\ndeploy: ["sh attack.sh deploy"]\nweb: node server.js\nhealth: /healthz\n',
  );
  git(dir, ['add', '-A']);
  git(dir, ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qm', 'attack']);
  const a = await deploy(attacker);
  expect(a.status, a.error ?? '').toBe('succeeded');
  buildLog = await taskLog(t, attacker.api, a.id);
}, 180_000);

afterAll(async () => {
  await stopChildren(children);
  hostService?.close();
  await dropServiceDatabase(t.config, otherService).catch(() => undefined);
  rmSync(hostTmpFile, { force: true });
  rmSync(hostUsrFile, { force: true });
});

function expectContained(output: string, label: 'build' | 'deploy' | 'web') {
  const lines = output.split('\n').filter((l) => l.startsWith(`${label}:`));
  expect(lines, output).toContain(`${label}:DONE`);
  expect(
    lines.filter((l) => l.includes('LEAK-')),
    output,
  ).toEqual([]);
  for (const target of targets) expect(lines).toContain(`${label}:CLOSED-${target.split('=')[0]}`);
  for (const target of allowed) expect(lines).toContain(`${label}:OPEN-${target.split('=')[0]}`);
  for (const name of Object.keys(logins)) expect(lines, output).toContain(`${label}:REFUSED-pg-${name}`);
  expect(lines).toContain(`${label}:UID=${tenantUid(attacker.environment.port)}`);
  expect(lines).toContain(`${label}:HOME=${environmentHome(t.dataDir, attacker.environment.id)}`);
  expect(lines).toContain(`${label}:WROTE-home`);
  const pids = Number(lines.find((l) => l.startsWith(`${label}:PIDS=`))!.split('=')[1]);
  expect(pids).toBeLessThanOrEqual(10); // its own pid namespace: bwrap's init, its shells, node, ls (the host has hundreds)
  expect(existsSync(hostTmpFile)).toBe(false); // its /tmp is its own
  expect(existsSync(hostUsrFile)).toBe(false);
}

describe('the sandbox of an environment', () => {
  it('is the full one on this host (bwrap, network namespace, nft firewall)', () => {
    expect(sandboxMode()).toMatchObject({ mode: 'namespaces' });
  });

  it('keeps a build step from the console and from other environments', () => {
    expectContained(buildLog, 'build');
  });

  it('keeps a deploy step from them too', () => {
    expectContained(buildLog, 'deploy');
  });

  it('keeps a running web process from them too, and it still serves through the environment port', async () => {
    const res = await fetch(`http://127.0.0.1:${attacker.environment.port}/probe`);
    expect(res.status).toBe(200);
    expectContained(await res.text(), 'web');
    expect(await fetchEnvironment(attacker.environment.port)).toEqual({ status: 200, text: 'attacker' });
    expect(await fetchEnvironment(victim.environment.port)).toEqual({ status: 200, text: 'v1' });
  });

  it('leaves the tenant its own HOME, owned by its uid and closed to others', () => {
    const home = environmentHome(t.dataDir, attacker.environment.id);
    expect(readFileSync(path.join(home, 'own-web'), 'utf8')).toBe('mine\n');
    const st = execFileSync('stat', ['-c', '%u %a', home], { encoding: 'utf8' }).trim();
    expect(st).toBe(`${tenantUid(attacker.environment.port)} 700`);
    expect(execFileSync('stat', ['-c', '%a', path.join(t.dataDir, 'secrets')], { encoding: 'utf8' }).trim()).toBe(
      '700',
    );
    expect(
      execFileSync('stat', ['-c', '%a', path.join(environmentDir(t.dataDir, victim.environment.id), 'web.log')], {
        encoding: 'utf8',
      }).trim(),
    ).toBe('600');
  });

  it("lets a service's role open its own database on the services server, not the server's admin database", async () => {
    const services = new URL(t.config.servicesDatabaseUrl!);
    const login = (database: string) =>
      new pg.Client({
        host: services.hostname,
        port: Number(services.port),
        user: otherService.role,
        password: otherService.password,
        database,
      });
    const own = login(otherService.database);
    await own.connect();
    await own.end();
    await expect(login(services.pathname.slice(1)).connect()).rejects.toMatchObject({ code: '42501' });
  });
});
