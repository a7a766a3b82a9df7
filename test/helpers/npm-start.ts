/**
 * `npm start` as the tests run it (test/system/supervision.test.ts, request-log-start.test.ts): the
 * context's database and host settings, ports and DATA_DIR of its own, the tests' Temporal CLI ports and
 * workflow bundle; started in a process group of its own, as a terminal's foreground job, and stopped as
 * a terminal's Ctrl-C does, with what still runs under its DATA_DIR killed after.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync } from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';
import type { TestContext } from './context';
import { freePort } from './ports';
import { killProcessesUnder, processesMentioning } from './processes';
import { until } from './until';

const root = path.resolve(__dirname, '../..');

export interface NpmStartPorts {
  api: number;
  edge: number;
  temporal: number;
}

/**
 * A DATA_DIR of its own under the run directory, which the sandboxes may traverse (0711), with the context's
 * keys: the context's tokens and sessions are the started API's too.
 */
export function npmStartDataDir(t: TestContext): string {
  const dataDir = mkdtempSync(path.join(inject('runDir'), 'start-'));
  chmodSync(dataDir, 0o711);
  cpSync(path.join(t.dataDir, 'secrets'), path.join(dataDir, 'secrets'), { recursive: true });
  return dataDir;
}

/** Free ports for the API and the edge, and `temporal` with `temporal + 1000` free too (the dev server's Web UI). */
export async function npmStartPorts(): Promise<NpmStartPorts> {
  return { api: await freePort(), edge: await freePort(), temporal: await freePort({ plusThousand: true }) };
}

export async function npmStartEnv(
  t: TestContext,
  ports: NpmStartPorts,
  dataDir: string,
  extra: NodeJS.ProcessEnv = {},
): Promise<NodeJS.ProcessEnv> {
  const { from, to } = t.config.environmentPorts;
  const environ: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: t.databaseUrl,
    TEMPORAL_PORT: String(ports.temporal),
    DATA_DIR: dataDir,
    PORT: String(ports.api),
    EDGE_PORT: String(ports.edge),
    // never the default 8443: another npm start on this host may hold it
    EDGE_TLS_PORT: String(await freePort()),
    HOST: '127.0.0.1',
    BASE_URL: `http://127.0.0.1:${ports.api}`,
    ENVIRONMENT_PORTS: `${from}-${to}`,
    INSTANCE_PORTS: `${t.config.instancePorts.from}-${t.config.instancePorts.to}`,
    LOCAL_REPOSITORY_ROOTS: t.config.localRepositoryRoots.join(','),
    SANDBOX_SHARED_DIRS: t.config.sandboxSharedDirs.join(','),
    // the services server: the file's own database server (the npm start checks at its start whether it accepts a
    // wrong password; supervision.test.ts gives it one of its own that does)
    SERVICES_DATABASE_URL: t.databaseUrl,
    LOG_LEVEL: 'warn',
    REMINDER_SCHEDULE: 'off',
    VC_WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    VC_PROCESS_BUNDLES: inject('processBundles'),
    ...extra,
  };
  delete environ.TEMPORAL_ADDRESS;
  return environ;
}

/** Starts `npm start`; `onOutput` gets its stdout and stderr as they come. */
export function spawnNpmStart(env: NodeJS.ProcessEnv, onOutput: (text: string) => void): ChildProcess {
  const start = spawn(process.execPath, ['scripts/bootstrap.mjs', 'start'], {
    cwd: root,
    detached: true, // a process group of its own, as a terminal's foreground job
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  start.stdout!.on('data', (d: Buffer) => onOutput(d.toString()));
  start.stderr!.on('data', (d: Buffer) => onOutput(d.toString()));
  return start;
}

/**
 * Waits until `npm start` says "Hosting Console is running." (up to 4 minutes); fails at once, with the tail of its
 * output, when it exits first (a start that could not start says why and stops: no need to wait the minutes out).
 */
export async function untilRunning(start: ChildProcess, output: () => string, what = ''): Promise<void> {
  const running = 'Hosting Console is running.';
  await until(
    `"${running}"${what}`,
    () => {
      if (output().includes(running)) return true;
      const ended = start.exitCode ?? start.signalCode;
      if (ended !== null)
        throw new Error(`npm start exited (${ended}) before it was running:\n${output().slice(-4000)}`);
      return false;
    },
    { timeoutMs: 240_000, detail: () => output().slice(-4000) },
  );
}

/**
 * Stops an `npm start` still running: SIGINT to its process group (a terminal's Ctrl-C), up to 90 s for it
 * to exit; then SIGKILL to whatever still runs under or mentions `dataDir` (a child it left, a tenant's).
 */
export async function stopNpmStart(start: ChildProcess | undefined, dataDir: string): Promise<void> {
  if (start && start.exitCode === null && start.signalCode === null) {
    try {
      process.kill(-start.pid!, 'SIGINT');
    } catch {
      // gone
    }
    await Promise.race([new Promise((r) => start.once('exit', r)), new Promise((r) => setTimeout(r, 90_000))]);
  }
  for (const p of processesMentioning(dataDir)) {
    try {
      process.kill(Number(p.split(' ')[0]), 'SIGKILL');
    } catch {
      // gone since it was listed
    }
  }
  killProcessesUnder(dataDir);
}
