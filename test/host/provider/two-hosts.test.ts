/**
 * Two hosts' agents on one machine (a move between them, tests of many hosts): each provider runs in a
 * process of its own with its own HOST_NAME, SANDBOX_NETWORK and DATA_DIR, and both run the same environment
 * (same id, same port, as a move does). Every machine object is named after its host, so neither touches
 * the other's: its network namespace and veth, its cgroup subtree `vc-console-<HOST_NAME>`, its nft tables.
 * Before (objects named after the port alone): the second agent reused the first one's namespace, the
 * first one's retire deleted it, killStrays killed the other agent's instance through the shared cgroup, and
 * each worker flushed the other's nft rules.
 */
import { type ChildProcess, execFileSync, fork, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostTag } from '../../../host/provider/host-identity';
import { processAlive } from '../../../host/provider/run-step';
import { closeJail, jailAddresses, netnsName, openJail } from '../../../host/provider/sandbox';
import { vethName } from '../../../host/provider/sandbox-network';
import { loadConfig } from '../../../system/config';
import { useTestContext } from '../../helpers/context';
import { freePort } from '../../helpers/ports';
import { testPortSlot } from '../../helpers/test-workers';

const SERVER = `
require('node:http').createServer((req, res) => {
  res.writeHead(200);
  res.end(req.url === '/healthz' ? 'ok' : 'served by ' + process.env.HOST_NAME);
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

interface Live {
  internalPort: number;
  pid: number;
  netns: string;
  address: string;
  netnsOfPid: string;
}

class Host {
  private next = 1;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  constructor(
    readonly name: string,
    readonly network: string,
    readonly child: ChildProcess,
  ) {
    child.on('message', (m: { id?: number; result?: unknown; error?: string }) => {
      const w = m.id ? this.waiting.get(m.id) : undefined;
      if (!w) return;
      this.waiting.delete(m.id!);
      if (m.error) w.reject(new Error(`${name}: ${m.error}`));
      else w.resolve(m.result);
    });
  }
  ask<T>(op: string, args: Record<string, unknown> = {}): Promise<T> {
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ id, op, ...args });
    });
  }
}

const t = useTestContext();
const NAMES = ['provider-test-host-a', 'hb'];
let root: string;
let releaseDir: string;
let services: Server;
let servicesPort: number;
const envId = randomUUID();
let port: number;
const hosts: Host[] = [];
const live: Record<string, Live> = {};

async function startHost(name: string, network: string, env: NodeJS.ProcessEnv = {}): Promise<Host> {
  const dataDir = path.join(root, name);
  await mkdir(dataDir, { recursive: true });
  await chmod(dataDir, 0o711);
  const child = fork(path.join(import.meta.dirname, '..', '..', 'helpers', 'provider-host.ts'), {
    execArgv: ['--import', 'tsx'],
    env: {
      PATH: process.env.PATH,
      HOST_NAME: name,
      SANDBOX_NETWORK: network,
      DATA_DIR: dataDir,
      SERVICES_PORT: String(servicesPort),
      // each host its own slice of the file's INSTANCE_PORTS (both forward on 127.0.0.1)
      INSTANCE_PORTS: `${t.config.instancePorts.from + hosts.length * 10}-${t.config.instancePorts.from + hosts.length * 10 + 9}`,
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`host ${name} exited (${code}) before it was ready`)));
  });
  const host = new Host(name, network, child);
  hosts.push(host);
  return host;
}

/** The nft tables of a host of this test, by its tag. */
function hostTables(name: string): string[] {
  const tag = hostTag(name);
  return [`inet vc_sandbox_${tag}`, `ip vc_sandbox_nat_${tag}`, `ip vc_services_${tag}`, `ip vc_instances_${tag}`];
}

function dropTables(name: string): void {
  for (const table of hostTables(name)) {
    try {
      execFileSync('nft', ['delete', 'table', ...table.split(' ')], { stdio: 'ignore' });
    } catch {
      // not there
    }
  }
}

function nftTables(): string {
  return execFileSync('nft', ['list', 'tables'], { encoding: 'utf8' });
}

async function get(address: string, internalPort: number): Promise<string> {
  const res = await fetch(`http://${address}:${internalPort}/`, { signal: AbortSignal.timeout(5000) });
  return res.text();
}

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'vc-two-hosts-'));
  await chmod(root, 0o711);
  releaseDir = path.join(root, 'release');
  await mkdir(releaseDir, { mode: 0o755 });
  await chmod(releaseDir, 0o755);
  await writeFile(path.join(releaseDir, 'server.js'), SERVER, { mode: 0o644 });
  // stands for the services server: what the sandboxes reach at their gateway, DNATed to the loopback
  services = createServer((s) => s.end());
  await new Promise<void>((r) => services.listen(0, '127.0.0.1', r));
  servicesPort = (services.address() as { port: number }).port;
  port = t.config.environmentPorts.to - 3;
  // what an earlier run left: each host's tables are made by its own agent here
  for (const name of NAMES) dropTables(name);
  await startHost(NAMES[0], '10.204.0.0/14'); // a long name: its tag is a hash
  await startHost(NAMES[1], '10.208.0.0/14'); // a short one: its tag is the name
}, 60_000);

afterAll(async () => {
  for (const h of hosts) {
    await h.ask('retire', { envId, port }).catch(() => undefined);
    await h.ask('stop').catch(() => undefined);
    h.child.kill('SIGKILL');
    dropTables(h.name);
  }
  await new Promise((r) => services?.close(r));
  await rm(root, { recursive: true, force: true });
}, 60_000);

describe('two hosts on one machine, the same environment on both', () => {
  it('each agent has a namespace of its own, in its own block, and both instances answer', async () => {
    const [a, b] = hosts;
    live.a = await a.ask<Live>('live', { envId, port, releaseDir });
    live.b = await b.ask<Live>('live', { envId, port, releaseDir });
    expect(live.a.netns).not.toBe(live.b.netns);
    expect(live.a.netnsOfPid).not.toBe(live.b.netnsOfPid);
    expect(live.a.netns.length).toBeLessThanOrEqual(15);
    expect(live.a.address.startsWith('10.20')).toBe(true);
    expect(live.a.address).not.toBe(live.b.address);
    expect(existsSync(`/run/netns/${live.a.netns}`)).toBe(true);
    expect(existsSync(`/run/netns/${live.b.netns}`)).toBe(true);
    expect(await get(live.a.address, live.a.internalPort)).toBe('served by provider-test-host-a');
    expect(await get(live.b.address, live.b.internalPort)).toBe('served by hb');
    // each instance is held in its own host's cgroup subtree
    expect(readFileSync(`/proc/${live.a.pid}/cgroup`, 'utf8')).toContain(`/vc-console-${NAMES[0]}/${envId}/web-`);
    expect(readFileSync(`/proc/${live.b.pid}/cgroup`, 'utf8')).toContain(`/vc-console-${NAMES[1]}/${envId}/web-`);
  }, 90_000);

  it("each host has its own nft tables: the second worker's set-up leaves the first one's rules", async () => {
    const tables = nftTables();
    for (const h of hosts) for (const table of hostTables(h.name)) expect(tables).toContain(`table ${table}\n`);
    expect(hostTag('hb')).toBe('hb');
    expect(hostTag('provider-test-host-a')).toMatch(/^[a-z0-9]{6}$/);
    const ruleset = execFileSync('nft', ['list', 'ruleset'], { encoding: 'utf8' });
    // both blocks are masqueraded and DNATed to the services port, each by its own host's tables
    for (const block of ['10.204.0.0/14', '10.208.0.0/14']) {
      expect(ruleset).toContain(`ip saddr ${block}`);
      expect(ruleset).toContain(`ip daddr ${block} tcp dport @ports dnat`);
    }
    // and each sandbox reaches the services port at its gateway (the other host's set-up came after A's)
    for (const [h, l] of [
      [hosts[0], live.a],
      [hosts[1], live.b],
    ] as const) {
      const gateway = l.address.replace(/\d+$/, (n) => String(Number(n) - 1));
      expect(await h.ask<string>('connect', { envId, port, to: gateway, toPort: servicesPort })).toBe('connected');
    }
  }, 60_000);

  it("killStrays of one agent does not kill the other agent's instance", async () => {
    const [a, b] = hosts;
    expect(await b.ask<number>('killStrays', { envId })).toBe(0);
    expect(processAlive(live.a.pid)).toBe(true);
    expect(await a.ask<number>('killStrays', { envId })).toBe(0);
    expect(processAlive(live.b.pid)).toBe(true);
    expect(await get(live.a.address, live.a.internalPort)).toBe('served by provider-test-host-a');
  }, 60_000);

  it("the first agent's retire leaves the second one's namespace and instance", async () => {
    const [a] = hosts;
    await a.ask('retire', { envId, port });
    expect(existsSync(`/run/netns/${live.a.netns}`)).toBe(false);
    expect(processAlive(live.a.pid)).toBe(false);
    expect(existsSync(`/run/netns/${live.b.netns}`)).toBe(true);
    expect(await get(live.b.address, live.b.internalPort)).toBe('served by hb');
  }, 60_000);
});

describe('SERVICES_HOST on another machine', () => {
  // "another machine": a network namespace of its own behind a veth, holding the services server's address
  const slot = testPortSlot();
  const ns = `vcsvc${slot}`;
  const hostSide = `10.99.${slot}.1`;
  const server = `10.99.${slot}.2`;
  const name = `hs${slot}`;
  const sh = (cmd: string) => execFileSync('sh', ['-c', cmd], { stdio: 'ignore' });
  let listener: ChildProcess | undefined;
  let host: Host;
  // ports nothing of this machine listens on: a DNAT to the loopback (as without SERVICES_HOST) reaches nothing
  let ports: [number, number];
  const svcEnv = randomUUID();
  const svcPort = () => t.config.environmentPorts.to - 7;

  beforeAll(async () => {
    ports = [await freePort(), await freePort()];
    sh(`ip netns delete ${ns} 2>/dev/null; ip link delete ${ns}h 2>/dev/null; true`);
    sh(`ip netns add ${ns} && ip link add ${ns}h type veth peer name eth0 netns ${ns}`);
    sh(`ip addr add ${hostSide}/30 dev ${ns}h && ip link set ${ns}h up`);
    sh(`ip -n ${ns} addr add ${server}/30 dev eth0 && ip -n ${ns} link set eth0 up && ip -n ${ns} link set lo up`);
    sh(`ip -n ${ns} route add default via ${hostSide}`);
    // the services server's stand-in there, on the port the sandboxes reach at their gateway, and one more
    listener = spawn('ip', [
      'netns',
      'exec',
      ns,
      process.execPath,
      '-e',
      `for (const p of [${ports[0]}, ${ports[1]}]) require('net').createServer((s) => s.end()).listen(p, '${server}');`,
    ]);
    dropTables(name);
    host = await startHost(name, `100.${64 + (slot % 16) * 4}.0.0/14`, {
      SERVICES_HOST: server,
      SERVICES_PORT: String(ports[0]),
    });
  }, 60_000);

  afterAll(async () => {
    await host?.ask('retire', { envId: svcEnv, port: svcPort() }).catch(() => undefined);
    listener?.kill('SIGKILL');
    sh(`ip netns delete ${ns} 2>/dev/null; ip link delete ${ns}h 2>/dev/null; true`);
  });

  it("DNATs the gateway's services port to SERVICES_HOST, and lets exactly that address and port through", async () => {
    const jail = await host.ask<Live>('live', { envId: svcEnv, port: svcPort(), releaseDir });
    const gateway = jail.address.replace(/\d+$/, (n) => String(Number(n) - 1));
    const connect = (to: string, toPort: number) =>
      host.ask<string>('connect', { envId: svcEnv, port: svcPort(), to, toPort });
    expect(await connect(gateway, ports[0])).toBe('connected');
    // the address itself, or another of its ports, stays a private address the sandbox cannot reach
    expect(await connect(server, ports[0])).toBe('timeout');
    expect(await connect(server, ports[1])).toBe('timeout');
    expect(await connect(gateway, ports[1])).not.toBe('connected');
    expect(
      execFileSync('nft', ['list', 'table', 'ip', `vc_services_${hostTag(name)}`], { encoding: 'utf8' }),
    ).toContain(`dnat to ${server}`);
  }, 60_000);
});

describe('the first start after host-named objects', () => {
  it("removes the port's old network (vc-<port>, vch<port>) holding the address its new one takes", async () => {
    const legacyPort = t.config.environmentPorts.to - 5;
    const legacyEnv = randomUUID();
    const { host } = jailAddresses(legacyPort);
    const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'ignore' });
    ip('netns', 'add', `vc-${legacyPort}`);
    ip('link', 'add', `vch${legacyPort}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', `vc-${legacyPort}`);
    ip('addr', 'add', `${host}/30`, 'dev', `vch${legacyPort}`);
    try {
      const jail = await openJail(root, legacyEnv, legacyPort);
      expect(jail.netns).toBe(netnsName(legacyPort));
      expect(existsSync(`/run/netns/vc-${legacyPort}`)).toBe(false);
      expect(existsSync(`/sys/class/net/vch${legacyPort}`)).toBe(false);
      expect(existsSync(`/sys/class/net/${vethName(legacyPort)}`)).toBe(true);
    } finally {
      await closeJail(root, legacyEnv, legacyPort);
      execFileSync('sh', ['-c', `ip netns delete vc-${legacyPort}; ip link delete vch${legacyPort}; true`], {
        stdio: 'ignore',
      });
    }
  }, 60_000);
});

describe('HOST_NAME and SANDBOX_NETWORK', () => {
  it("default to the machine's hostname and 10.200.0.0/14", () => {
    const config = loadConfig({});
    expect(config.hostName).toBe(os.hostname());
    expect(config.sandboxNetwork).toBe('10.200.0.0/14');
  });

  it('refuse a name a machine object cannot carry, and a block too small or not at its first address', () => {
    expect(() => loadConfig({ HOST_NAME: 'a/b' })).toThrow(/HOST_NAME/);
    expect(() => loadConfig({ SANDBOX_NETWORK: '10.204.0.0/16' })).toThrow(/SANDBOX_NETWORK must be a \/14/);
    expect(() => loadConfig({ SANDBOX_NETWORK: '10.205.0.0/14' })).toThrow(/first address/);
    expect(() => loadConfig({ SANDBOX_NETWORK: '10.300.0.0/14' })).toThrow(/SANDBOX_NETWORK/);
    expect(loadConfig({ HOST_NAME: 'web-2.eu', SANDBOX_NETWORK: '10.204.0.0/14' })).toMatchObject({
      hostName: 'web-2.eu',
      sandboxNetwork: '10.204.0.0/14',
    });
  });
});
