/**
 * The edge across hosts (issue 26 item 5, docs/hosts.md "The edge across hosts"), with two hosts on this one
 * machine: the file's own (the in-process worker and edge, HOST_ADDRESS 127.0.0.1) and a second agent, a worker
 * process with HOST_NAME `s<slot>h2`, HOST_ADDRESS `127.0.<10+slot>.2` (all of 127/8 is this machine's
 * loopback), its own INSTANCE_PORTS and SANDBOX_NETWORK block. Each environment answers through the edge from its
 * own host; every server of their HAProxy backends, read through HAProxy's runtime API, is a HOST_ADDRESS and an
 * instance port of its host's range, never a sandbox address; the app sees its host's veth address as the source
 * (a loopback source is SNATed); a redeploy gives the old instance's port back; a clean stop of the agent takes
 * every forward of its instance ports away. The second host reaches no services server (its SERVICES_HOST is an
 * address nothing listens on): a database service for its environment is refused `services_unreachable`, naming it.
 *
 * The second host shares the file's DATA_DIR: until releases are kept in a store both can read (RELEASE_STORE), an
 * environment on a host with another DATA_DIR cannot find the release the build made. Everything else of it is
 * its own (its name, so its nft tables, namespaces and cgroups; its address, ports and block).
 */
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { commitServer, createDeployWorld, createEnvironment, taskLog, waitForTask } from '../helpers/deploy-fixtures';
import { sessionAgent } from '../helpers/fixtures';
import { spawnSystemProcess } from '../helpers/processes';
import { until } from '../helpers/until';
import { backendServers } from '../helpers/host-agents';
import { createEnvironmentMachines } from '../../api/machines/service';
import { hostTag } from '../../host/provider/host-identity';
import { testPortSlot } from '../helpers/test-workers';

const t = useTestContext({ worker: true });
const slot = testPortSlot();
const B = {
  name: `s${slot}h2`,
  address: `127.0.${10 + slot}.2`,
  network: `10.${64 + slot * 4}.0.0/14`,
  nowhere: `127.0.${10 + slot}.9`,
};
// above the context's ranges (62000 + 95 per run and worker), a few ports per slot
const bPorts = { from: 65420 + slot * 6, to: 65420 + slot * 6 + 5 };
const SANDBOX_BLOCKS = [
  ['10.200.0.0', 14], // the file's host: the default SANDBOX_NETWORK
  [B.network.split('/')[0], 14],
] as const;

/** An app that says its version and the address its request came from. */
const WHO_JS = `
const http = require('node:http');
const version = require('node:fs').readFileSync(__dirname + '/VERSION', 'utf8').trim();
http.createServer((req, res) => {
  if (req.url === '/healthz') { res.writeHead(200); return res.end('ok'); }
  res.end(version + ' ' + req.socket.remoteAddress);
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

let agent: ChildProcess;
let agentExit: Promise<number | null>;
let world: Awaited<ReturnType<typeof createDeployWorld>>;
let onB: { id: string; port: number };

const toNumber = (ip: string) => ip.split('.').reduce((n, o) => n * 256 + Number(o), 0);
const inBlock = (ip: string, [base, bits]: readonly [string, number]) =>
  Math.floor(toNumber(ip) / 2 ** (32 - bits)) === Math.floor(toNumber(base) / 2 ** (32 - bits));

/** The instance ports forwarded on `address` by the nft table of the host tagged `tag`. */
function forwarded(tag: string, address: string): number[] {
  let listed: string;
  try {
    listed = execFileSync('nft', ['-j', 'list', 'map', 'ip', `vc_instances_${tag}`, 'forwards'], { encoding: 'utf8' });
  } catch {
    return [];
  }
  const elems = (JSON.parse(listed).nftables as { map?: { elem?: [{ concat: [string, number] }, unknown][] } }[])
    .flatMap((i) => i.map?.elem ?? [])
    .map((e) => e[0].concat);
  return elems.filter(([a]) => a === address).map(([, p]) => p);
}

async function deploy(envId: string) {
  const res = await world.api.post(`/environments/${envId}/deploy`);
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, world.api, res.body.id, { timeoutMs: 90_000 });
  expect(task.status, `${task.error}\n${await taskLog(t, world.api, task.id)}`).toBe('succeeded');
}

const answer = async (port: number) => (await fetch(`http://127.0.0.1:${port}/`)).text();

beforeAll(async () => {
  agent = spawnSystemProcess(t, 'processes/worker.ts', {
    HOST_NAME: B.name,
    HOST_ADDRESS: B.address,
    INSTANCE_PORTS: `${bPorts.from}-${bPorts.to}`,
    SANDBOX_NETWORK: B.network,
    // where this host would reach the services server: an address nothing listens on (its check fails)
    SERVICES_HOST: B.nowhere,
    HOST_CAPACITY: 'cpu=2,memory_mb=4096,disk_gb=20',
  });
  agentExit = new Promise((r) => agent.once('exit', r));
  await until(
    'the second host to be ready',
    async () =>
      Boolean(await t.deps.knex('hosts').where({ name: B.name }).first()) &&
      Boolean(await t.deps.knex('worker_heartbeats').where('identity', 'like', `%:${agent.pid}`).first()),
    { timeoutMs: 90_000, intervalMs: 250 },
  );
  world = await createDeployWorld(t);
  commitServer(world.repo, WHO_JS, 'who');
  const second = await createEnvironment(t, world.project, { name: 'second' });
  onB = { id: second.id, port: second.port };
  for (const env of [world.environment, second])
    await t.deps.knex.transaction((trx) => createEnvironmentMachines(trx, t.deps, env));
  await t.deps.knex('servers').where({ environment_id: second.id, role: 'web' }).update({ host: B.name });
}, 120_000);

afterAll(async () => {
  if (agent && agent.exitCode === null) {
    process.kill(agent.pid!, 'SIGKILL');
    await agentExit;
  }
  // the second host's machine objects (the context removes the file's host's)
  const tag = hostTag(B.name);
  const quietly = (cmd: string) => execFileSync('sh', ['-c', `${cmd} 2>/dev/null || true`]);
  if (onB) {
    quietly(`ip netns delete vc-${tag}-${onB.port}`);
    quietly(`ip link delete v${tag}-${onB.port}`);
  }
  for (const table of ['inet vc_sandbox_', 'ip vc_sandbox_nat_', 'ip vc_services_', 'ip vc_instances_'])
    quietly(`nft delete table ${table}${tag}`);
}, 60_000);

describe('the edge across hosts', () => {
  it('serves each environment from its own host at HOST_ADDRESS:<instance port>, never at a sandbox address', async () => {
    await deploy(world.environment.id);
    await deploy(onB.id);

    // answered by the app, through the edge, from each host's sandbox: the source it sees is its veth's host side
    const [a, b] = [await answer(world.environment.port), await answer(onB.port)];
    expect(a).toMatch(/^v1 /);
    expect(b).toMatch(/^v1 /);
    expect(inBlock(a.split(' ')[1], SANDBOX_BLOCKS[0]), a).toBe(true);
    expect(inBlock(b.split(' ')[1], SANDBOX_BLOCKS[1]), b).toBe(true);

    const ranges = { '127.0.0.1': t.config.instancePorts, [B.address]: bPorts };
    const expected: Record<number, string> = { [world.environment.port]: '127.0.0.1', [onB.port]: B.address };
    for (const [port, address] of Object.entries(expected)) {
      // the backend's servers as HAProxy's runtime holds them (idle slots' placeholders left out)
      const servers = await backendServers(t.dataDir, Number(port));
      expect(servers.length).toBeGreaterThan(0);
      for (const s of servers) {
        expect(
          SANDBOX_BLOCKS.some((block) => inBlock(s.addr, block)),
          `${s.name} ${s.addr}`,
        ).toBe(false);
        const range = ranges[s.addr];
        expect(range, `${s.name} ${s.addr}:${s.port}`).toBeDefined();
        expect(s.port).toBeGreaterThanOrEqual(range.from);
        expect(s.port).toBeLessThanOrEqual(range.to);
      }
      const serving = servers.filter((s) => s.on);
      expect(serving.map((s) => s.addr)).toEqual([address]);
    }

    // the ports are recorded per host, and each host forwards its own
    const rows = await t.deps.knex('instance_ports').orderBy('host').select('host', 'port', 'environment_id');
    expect(rows.map((r) => [r.host, r.environment_id])).toEqual(
      [
        [t.config.hostName, world.environment.id],
        [B.name, onB.id],
      ].sort((x, y) => x[0].localeCompare(y[0])),
    );
    const bRow = rows.find((r) => r.host === B.name)!;
    expect(forwarded(hostTag(B.name), B.address)).toEqual([bRow.port]);
    const aRow = rows.find((r) => r.host === t.config.hostName)!;
    expect(forwarded(hostTag(t.config.hostName), '127.0.0.1')).toContain(aRow.port);
  }, 240_000);

  it("a redeploy's old instance gives its port back once stopped", async () => {
    const before = await t.deps.knex('instance_ports').where({ host: B.name }).pluck('port');
    await deploy(onB.id);
    await until(
      'the old instance to give its port back',
      async () => (await t.deps.knex('instance_ports').where({ host: B.name })).length === 1,
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    const after = await t.deps.knex('instance_ports').where({ host: B.name }).pluck('port');
    expect(after).toHaveLength(1);
    expect(after).not.toEqual(before);
    expect(forwarded(hostTag(B.name), B.address)).toEqual(after);
    expect(await answer(onB.port)).toMatch(/^v1 /);
  }, 120_000);

  it('refuses a database service with services_unreachable naming the host whose sandboxes cannot reach it', async () => {
    const owner = await sessionAgent(t, world.owner);
    const choices = await owner.get(`/environments/${onB.id}/services/choices`);
    expect(choices.status, choices.text).toBe(200);
    const plan = choices.body.data[0].plans[0].id;
    const res = await owner.post(`/environments/${onB.id}/services`, { kind: 'postgresql', plan });
    expect(res.status, res.text).toBe(409);
    expect(res.body.error.code).toBe('services_unreachable');
    expect(res.body.error.message).toContain(`on host ${B.name} cannot reach the services server`);
    expect(res.body.error.message).toContain(B.nowhere);
    expect(res.body.error.host).toBe(B.name);
    expect(await t.deps.knex('services').where({ environment_id: onB.id })).toHaveLength(0);
  });

  it("a clean stop of the agent takes its forwards and ports away, and leaves the other host's", async () => {
    // the file's own host's forwards in its own INSTANCE_PORTS: other test files share the machine's host tag
    const ours = (ports: number[]) =>
      ports.filter((p) => p >= t.config.instancePorts.from && p <= t.config.instancePorts.to).sort();
    const aPorts = ours(forwarded(hostTag(t.config.hostName), '127.0.0.1'));
    process.kill(agent.pid!, 'SIGTERM');
    expect(await agentExit).toBe(0);
    expect(forwarded(hostTag(B.name), B.address)).toEqual([]);
    expect(await t.deps.knex('instance_ports').where({ host: B.name })).toEqual([]);
    expect(ours(forwarded(hostTag(t.config.hostName), '127.0.0.1'))).toEqual(aPorts);
    expect(aPorts.length).toBeGreaterThan(0);
    expect(await answer(world.environment.port)).toMatch(/^v1 /);
  }, 60_000);
});
