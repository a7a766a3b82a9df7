import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
// Keyword search attributes on every task's workflow, so operators can filter in the Web UI.
import { SEARCH_ATTRIBUTES } from '../db/vocabulary';
import type { ChildSpec } from './supervision';

const { temporal } = proto;

export interface DevServer {
  address: string;
  uiUrl: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

interface DevServerOptions {
  cliPath: string;
  dataDir: string;
  port: number;
  uiPort?: number;
  namespace: string;
  headless?: boolean;
  ip?: string;
  /**
   * Keep the state in memory, not in dataDir's SQLite file: a server that is never restarted with its history (the
   * tests' run's). No file, no fsync per write.
   */
  inMemory?: boolean;
}

/**
 * `temporal server start-dev` persisted to a SQLite file under dataDir (the same file at every start: a
 * restarted server has the history), as a child spec for npm start's supervision; ready once the frontend
 * answers with the search attributes registered. Its output goes to dataDir/temporal/server.log.
 */
export function temporalDevServerChild(opts: DevServerOptions): { spec: ChildSpec; address: string; uiUrl: string } {
  const dir = join(opts.dataDir, 'temporal');
  mkdirSync(dir, { recursive: true });
  const ip = opts.ip ?? '127.0.0.1';
  const uiPort = opts.uiPort ?? opts.port + 1000;
  const args = [
    'server',
    'start-dev',
    ...(opts.inMemory ? [] : ['--db-filename', join(dir, 'temporal.sqlite')]),
    '--ip',
    ip,
    '--port',
    String(opts.port),
    '--namespace',
    opts.namespace,
    '--log-level',
    'warn',
    ...(opts.headless ? ['--headless'] : ['--ui-port', String(uiPort)]),
    ...SEARCH_ATTRIBUTES.flatMap((name) => ['--search-attribute', `${name}=Keyword`]),
  ];
  const log = openSync(join(dir, 'server.log'), 'a');
  // this machine's own processes reach it on loopback when it listens on every address
  const address = `${ip === '0.0.0.0' ? '127.0.0.1' : ip}:${opts.port}`;
  return {
    address,
    uiUrl: `http://${ip === '0.0.0.0' ? 'localhost' : ip}:${uiPort}`,
    spec: {
      name: 'temporal',
      command: opts.cliPath,
      args,
      stdio: ['ignore', log, log],
      ready: () => waitForTemporal(address, opts.namespace, Number.POSITIVE_INFINITY),
      readyTimeoutMs: 60_000,
      stopTimeoutMs: 10_000,
    },
  };
}

/** Until the frontend at `address` answers, with the search attributes registered. */
async function waitForTemporal(address: string, namespace: string, deadline: number): Promise<void> {
  for (;;) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await ensureSearchAttributes(connection, namespace);
      } finally {
        await connection.close();
      }
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`Temporal dev server did not answer on ${address}: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/**
 * Starts `temporal server start-dev` (as temporalDevServerChild runs it) as a plain child, for the tests.
 * Resolves once the frontend answers.
 */
export async function startTemporalDevServer(opts: DevServerOptions): Promise<DevServer> {
  const { spec, address, uiUrl } = temporalDevServerChild(opts);
  const child = spawn(spec.command, spec.args, { stdio: spec.stdio, detached: false });
  let exited: string | undefined;
  child.once('exit', (code, signal) => {
    exited = `exited with ${signal ?? code}`;
  });
  const deadline = Date.now() + 60_000;
  const log = join(opts.dataDir, 'temporal', 'server.log');
  await Promise.race([
    waitForTemporal(address, opts.namespace, deadline),
    new Promise<never>((_, reject) => {
      const t = setInterval(() => {
        if (!exited) return;
        clearInterval(t);
        reject(new Error(`Temporal dev server ${exited}; see ${log}`));
      }, 100);
      t.unref();
    }),
  ]).catch((err) => {
    child.kill('SIGKILL');
    throw err;
  });
  return {
    address,
    uiUrl,
    process: child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

/** Registers any missing Keyword search attributes (also on an existing server or database file). */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<void> {
  const listed = await connection.operatorService.listSearchAttributes({ namespace });
  const existing = new Set(Object.keys(listed.customAttributes ?? {}));
  const missing = SEARCH_ATTRIBUTES.filter((n) => !existing.has(n));
  if (missing.length === 0) return;
  const searchAttributes: Record<string, number> = {};
  for (const name of missing)
    searchAttributes[name] = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
  try {
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
  } catch (err) {
    if (!/already exists/i.test((err as Error).message)) throw err;
  }
}
