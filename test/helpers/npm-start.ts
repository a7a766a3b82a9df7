/**
 * `npm start` as the tests run it (test/system/supervision.test.ts, request-log-start.test.ts): the
 * context's database and host settings, ports and DATA_DIR of its own, the tests' Temporal CLI ports and
 * workflow bundle; started in a process group of its own, as a terminal's foreground job.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { inject } from 'vitest';
import type { TestContext } from './context';
import { freePort } from './ports';

const root = path.resolve(__dirname, '../..');

export interface NpmStartPorts {
  api: number;
  edge: number;
  temporal: number;
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
    LOCAL_REPOSITORY_ROOTS: t.config.localRepositoryRoots.join(','),
    SANDBOX_SHARED_DIRS: t.config.sandboxSharedDirs.join(','),
    // the services server: this host's 127.0.0.1:5432, which trusts without a password (checked at start)
    SERVICES_DATABASE_URL: t.databaseUrl,
    LOG_LEVEL: 'warn',
    REMINDER_SCHEDULE: 'off',
    VC_WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    ...extra,
  };
  delete environ.TEMPORAL_ADDRESS;
  return environ;
}

export function spawnNpmStart(env: NodeJS.ProcessEnv): ChildProcess {
  return spawn(process.execPath, ['scripts/bootstrap.mjs', 'start'], {
    cwd: root,
    detached: true, // a process group of its own, as a terminal's foreground job
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
}
