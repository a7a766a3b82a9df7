/**
 * What the files with two hosts (test/helpers/two-hosts.ts) use beside their tests: the operator's `hosts` command
 * (and `keys`, run the same way),
 * the instances a host runs (from /proc's cgroups), and a killed worker's sandbox networks removed.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { TestContext } from './context';

/** What `npm run hosts -- ...args` runs (scripts/bootstrap.mjs, the command's bundle) with the file's settings. */
export function runHostsCli(
  t: TestContext,
  lost: number,
  ...args: string[]
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runOperatorCli(t, 'hosts', { HOST_LOST_SECONDS: String(lost) }, ...args);
}

/** What `npm run <command> -- ...args` runs (scripts/bootstrap.mjs) with the file's settings and `env`. */
export function runOperatorCli(
  t: TestContext,
  command: 'hosts' | 'keys',
  env: Record<string, string>,
  ...args: string[]
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['scripts/bootstrap.mjs', command, '--', ...args], {
      cwd: path.resolve(__dirname, '../..'),
      env: {
        ...process.env,
        DATABASE_URL: t.databaseUrl,
        TEMPORAL_ADDRESS: t.config.temporalAddress,
        TEMPORAL_TASK_QUEUE: t.config.taskQueue,
        DATA_DIR: t.dataDir,
        LOG_LEVEL: 'silent',
        ...env,
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

/**
 * What the host watch was doing, for a wait's timeout: every host's row (the sweeper's heartbeat decides whether
 * anyone is taken as lost), the schedule's last actions and running round, and that round's pending activities
 * (an activity retrying holds every round up: the schedule skips while one runs).
 */
export async function hostWatchDiagnosis(t: TestContext, scheduleId: string): Promise<string> {
  const lines: string[] = [];
  try {
    const hosts = await t.deps.knex('hosts').select('name', 'status', 'heartbeat_at', 'lost_at');
    const now = (await t.deps.knex.raw('SELECT now() AS now')).rows[0].now;
    lines.push(`database now ${new Date(now).toISOString()}; hosts: ${JSON.stringify(hosts)}`);
    const schedule = await t.deps.temporal.schedule.getHandle(scheduleId).describe();
    const recent = schedule.info.recentActions.slice(-5).map((a) => ({
      scheduled: a.scheduledAt.toISOString(),
      taken: a.takenAt.toISOString(),
      workflow: a.action.workflow.workflowId,
    }));
    lines.push(`schedule ${scheduleId}: paused ${schedule.state.paused}; recent rounds ${JSON.stringify(recent)}`);
    for (const running of schedule.info.runningActions) {
      const handle = t.deps.temporal.workflow.getHandle(
        running.workflow.workflowId,
        running.workflow.firstExecutionRunId,
      );
      const described = await handle.describe();
      const pending = (described.raw.pendingActivities ?? []).map((p) => ({
        type: p.activityType?.name,
        state: p.state,
        attempt: p.attempt,
        failure: p.lastFailure?.message,
      }));
      lines.push(
        `running round ${running.workflow.workflowId} since ${described.startTime.toISOString()}: ${JSON.stringify(pending)}`,
      );
    }
  } catch (err) {
    lines.push(`(diagnosis failed: ${(err as Error).message})`);
  }
  return lines.join('\n');
}
