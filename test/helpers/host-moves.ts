/**
 * What test/workflows/host-moves.test.ts uses beside its tests: the operator's `hosts` command, the instances a
 * host runs (from /proc's cgroups), and a killed worker's sandbox networks removed.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { TestContext } from './context';

/** `npm run hosts -- ...args` with the file's settings (`t`, its HOST_LOST_SECONDS). */
export function runHostsCli(
  t: TestContext,
  lost: number,
  ...args: string[]
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'processes/hosts.ts', ...args], {
      cwd: path.resolve(__dirname, '../..'),
      env: {
        ...process.env,
        DATABASE_URL: t.databaseUrl,
        TEMPORAL_ADDRESS: t.config.temporalAddress,
        TEMPORAL_TASK_QUEUE: t.config.taskQueue,
        DATA_DIR: t.dataDir,
        HOST_LOST_SECONDS: String(lost),
        LOG_LEVEL: 'silent',
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The environment's web instances running in `host`'s cgroup subtree: their cgroup leaves (`web-<pid>`). */
export function instancesOn(host: string, envId: string): string[] {
  const leaves = new Set<string>();
  const leaf = new RegExp(`/vc-console-${host}/${envId}/(web-\\d+)$`, 'm');
  for (const entry of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const m = leaf.exec(readFileSync(`/proc/${entry}/cgroup`, 'utf8'));
      if (m) leaves.add(m[1]);
    } catch {
      // gone meanwhile
    }
  }
  return [...leaves];
}

/** The second host's network namespaces, veths and nft tables (its agent was killed: nothing else removes them). */
export function removeHostNetworks(tag: string): void {
  const run = (cmd: string, args: string[]) => spawnSync(cmd, args, { stdio: 'ignore' });
  let names: string[] = [];
  try {
    names = readdirSync('/run/netns');
  } catch {
    // none
  }
  for (const name of names.filter((n) => n.startsWith(`vc-${tag}-`))) {
    run('ip', ['netns', 'delete', name]);
    run('ip', ['link', 'delete', `v${tag}-${name.slice(`vc-${tag}-`.length)}`]);
  }
  for (const table of [
    `inet vc_sandbox_${tag}`,
    `ip vc_sandbox_nat_${tag}`,
    `ip vc_services_${tag}`,
    `ip vc_instances_${tag}`,
  ])
    run('nft', ['delete', 'table', ...table.split(' ')]);
}
