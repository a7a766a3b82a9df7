/**
 * A second host agent beside a test file's own host: `processes/host.ts` (what `npm run host` runs after its
 * bootstrap) with its own HOST_NAME, DATA_DIR, INSTANCE_PORTS and SANDBOX_NETWORK, pointed at the file's database,
 * Temporal and task queue with the file's encryption key, as `npm run hosts -- join` would set it. Its blocks come
 * from VC_TEST_PORT_SLOT, so runs side by side never share them.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';
import { hostTag } from '../../host/provider/host-identity';
import { repositoriesDir, type TestContext } from './context';
import { killProcessesUnder } from './processes';
import { until } from './until';
import { testPortSlot } from './test-workers';

const root = path.resolve(__dirname, '../..');

export interface SecondHost {
  name: string;
  dataDir: string;
  /** Its INSTANCE_PORTS, where the edge reaches its instances (on HOST_ADDRESS 127.0.0.1). */
  instancePorts: { from: number; to: number };
  child: ChildProcess;
  output(): string;
  exit: Promise<number | null>;
  stop(): Promise<void>;
}

/** The second octet of the slot's sandbox block `block` (a /14 of 10.0.0.0/8: 10.128.0.0 onwards, 8 per slot). */
function sandboxBlock(block: 0 | 1): number {
  const slot = testPortSlot();
  return (128 + slot * 8 + block * 4) % 256;
}

/** The settings `hosts -- join` gives a new machine, from the file's own. */
function joinedSettings(t: TestContext): NodeJS.ProcessEnv {
  const key = JSON.parse(readFileSync(path.join(t.dataDir, 'secrets', 'encryption-key.json'), 'utf8'));
  return {
    TEMPORAL_ADDRESS: t.config.temporalAddress,
    TEMPORAL_TASK_QUEUE: t.config.taskQueue,
    DATABASE_URL: t.databaseUrl,
    ENCRYPTION_KEY_ID: key.id,
    ENCRYPTION_KEY: Buffer.from(key.key, 'base64').toString('hex'),
    RELEASE_STORE: t.config.releaseStore.location,
  };
}

/** Starts the agent (not waiting for it); `extra` overrides its settings. */
export function spawnSecondHost(
  t: TestContext,
  name: string,
  extra: NodeJS.ProcessEnv = {},
  /** Which of the slot's two sandbox blocks (files whose agents share environment ports take different ones). */
  block: 0 | 1 = 0,
): SecondHost {
  const slot = testPortSlot();
  const dataDir = mkdtempSync(path.join(inject('runDir'), 'host-b-'));
  chmodSync(dataDir, 0o711);
  const ports = 32000 + slot * 40;
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ...joinedSettings(t),
    HOST_NAME: name,
    HOST_ADDRESS: '127.0.0.1',
    HOST_CAPACITY: 'cpu=100,memory_mb=1000000,disk_gb=1000',
    INSTANCE_PORTS: `${ports}-${ports + 39}`,
    DATA_DIR: dataDir,
    SANDBOX_NETWORK: `10.${sandboxBlock(block)}.0.0/14`,
    SANDBOX_SHARED_DIRS: t.config.sandboxSharedDirs.join(','),
    ENVIRONMENT_PORTS: `${t.config.environmentPorts.from}-${t.config.environmentPorts.to}`,
    LOCAL_REPOSITORY_ROOTS: repositoriesDir(),
    SERVICES_DATABASE_URL: t.config.servicesDatabaseUrl,
    VC_WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    VC_PROCESS_BUNDLES: inject('processBundles'),
    LOG_LEVEL: 'warn',
    ...extra,
  };
  const child = spawn(process.execPath, ['--import', 'tsx', 'processes/host.ts'], {
    cwd: root,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d));
  child.stderr!.on('data', (d: Buffer) => (out += d));
  const exit = new Promise<number | null>((r) => child.once('exit', r));
  return {
    name,
    dataDir,
    instancePorts: { from: ports, to: ports + 39 },
    child,
    output: () => out,
    exit,
    async stop() {
      if (child.exitCode === null) {
        try {
          process.kill(-child.pid!, 'SIGTERM');
        } catch {
          // gone
        }
        await Promise.race([exit, new Promise((r) => setTimeout(r, 20_000))]);
      }
      killProcessesUnder(dataDir);
      removeHostNetworks(name);
    },
  };
}

/**
 * What the agent's sandboxes left on this machine's kernel (their networks stay when an agent stops, as a
 * worker's do): its network namespaces (their veths go with them) and its nftables tables, found by its tag.
 */
export function removeHostNetworks(name: string): void {
  const tag = hostTag(name);
  let names: string[] = [];
  try {
    names = readdirSync('/run/netns');
  } catch {
    // none
  }
  for (const ns of names.filter((n) => n.startsWith(`vc-${tag}-`)))
    spawnSync('ip', ['netns', 'delete', ns], { stdio: 'ignore' });
  const tables = spawnSync('nft', ['list', 'tables'], { encoding: 'utf8' }).stdout ?? '';
  for (const line of tables.split('\n')) {
    const [, family, table] = /^table (\w+) (\S+)$/.exec(line.trim()) ?? [];
    if (table?.endsWith(`_${tag}`)) spawnSync('nft', ['delete', 'table', family, table], { stdio: 'ignore' });
  }
}

/** Starts the agent and waits for `Host NAME joined`; fails at once when it exits instead. */
export async function startSecondHost(t: TestContext, name: string, extra: NodeJS.ProcessEnv = {}, block: 0 | 1 = 0) {
  const host = spawnSecondHost(t, name, extra, block);
  let exited = false;
  void host.exit.then(() => (exited = true));
  await until(
    `"Host ${name} joined"`,
    () => {
      if (exited) throw new Error(`the agent exited: ${host.output()}`);
      return host.output().includes(`Host ${name} joined`);
    },
    { timeoutMs: 120_000, intervalMs: 250 },
  );
  return host;
}
