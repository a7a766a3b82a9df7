import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
// Keyword search attributes on every task's workflow, so operators can filter in the Web UI.
import { SEARCH_ATTRIBUTES } from '../db/vocabulary';

const { temporal } = proto;

export interface DevServer {
  address: string;
  uiUrl: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts `temporal server start-dev` persisted to a SQLite file under dataDir, with the search
 * attributes registered. Resolves once the frontend answers.
 */
export async function startTemporalDevServer(opts: {
  cliPath: string;
  dataDir: string;
  port: number;
  uiPort?: number;
  namespace: string;
  headless?: boolean;
  ip?: string;
}): Promise<DevServer> {
  const dir = join(opts.dataDir, 'temporal');
  mkdirSync(dir, { recursive: true });
  const ip = opts.ip ?? '127.0.0.1';
  const uiPort = opts.uiPort ?? opts.port + 1000;
  const args = [
    'server',
    'start-dev',
    '--db-filename',
    join(dir, 'temporal.sqlite'),
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
  const child = spawn(opts.cliPath, args, { stdio: ['ignore', log, log], detached: false });
  const address = `${ip}:${opts.port}`;
  let exited: string | undefined;
  child.once('exit', (code, signal) => {
    exited = `exited with ${signal ?? code}`;
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`Temporal dev server ${exited}; see ${join(dir, 'server.log')}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await ensureSearchAttributes(connection, opts.namespace);
      } finally {
        await connection.close();
      }
      break;
    } catch (err) {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`Temporal dev server did not answer on ${address} within 60 s: ${(err as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  return {
    address,
    uiUrl: `http://${ip === '0.0.0.0' ? 'localhost' : ip}:${uiPort}`,
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
