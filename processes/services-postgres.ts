/**
 * The services server `npm start` runs (CONTRACT "Point-in-time recovery"): SERVICES_PGDATA, initdb'd when
 * empty, supervised as `services-postgres` on SERVICES_PORT beside the console's own database; or, with no
 * SERVICES_DATABASE_URL, SERVICES_PGDATA and DATABASE_URL, the embedded server itself. Either way its WAL is
 * archived with pgBackRest (host/pitr.ts): the flags and environment are given on every start, the stanza is
 * created once the server answers, and the worker and the API get the server's URL and SERVICES_PGDATA.
 */
import { join } from 'node:path';
import pg from 'pg';
import type { Config } from '../system/config';
import type { Secrets } from '../system/secrets';
import {
  archiveFlags,
  pgbackrest,
  pitrEnv,
  pitrPassphrase,
  pitrServer,
  preparePitr,
  type PitrServer,
} from '../host/pitr';
import { allowHosts, clusterChild, embeddedPassword, initialiseCluster, listenFlags } from './embedded-postgres';
import type { ChildSpec } from './supervision';

/** pgBackRest on PATH, else an error naming the command that installs it. */
export async function assertPgbackrest(): Promise<void> {
  const { spawnSync } = await import('node:child_process');
  if (spawnSync('pgbackrest', ['version'], { stdio: 'ignore' }).error)
    throw new Error(
      'pgbackrest is not installed (the services server archives its WAL with it): apt-get install -y pgbackrest',
    );
}

/** The archive's part of a server's start: its flags and environment (the passphrase only there). */
export function archiveSettings(server: PitrServer, secrets: Secrets) {
  preparePitr(server);
  return { flags: archiveFlags(server), env: pitrEnv(server, pitrPassphrase(server.dataDir, secrets)) };
}

/** The SERVICES_PGDATA server as a supervised child, and its superuser URL (its `postgres` database). */
export async function servicesPostgresChild(
  config: Config,
  secrets: Secrets,
  log: (m: string) => void,
): Promise<{ spec: ChildSpec; url: string; server: PitrServer }> {
  const server = pitrServer(config)!;
  const password = embeddedPassword(config.dataDir, 'services-postgres-password');
  await initialiseCluster(server.pgdata, password, server.port, log);
  // the services server of every host's sandboxes: it listens for hosts on CONTROL_PLANE_BIND too
  allowHosts(server.pgdata, config.controlPlaneBind);
  const archive = archiveSettings(server, secrets);
  const spec = await clusterChild({
    name: 'services-postgres',
    databaseDir: server.pgdata,
    logFile: join(config.dataDir, 'run', 'services-postgres.log'),
    port: server.port,
    password,
    flags: [...listenFlags(config.controlPlaneBind), ...archive.flags],
    env: archive.env,
  });
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${server.port}/postgres`;
  return { spec, url, server };
}

/**
 * Once the server answers: tenants may open none of its own databases, and the archive's stanza exists
 * (`stanza-create` is a no-op on a stanza that matches the server).
 */
export async function setUpServicesServer(
  server: PitrServer,
  url: string,
  secrets: Secrets,
  say: (m: string) => void,
): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const db of ['template1', 'postgres'])
      await client.query(`REVOKE CONNECT, TEMPORARY ON DATABASE ${db} FROM PUBLIC`);
  } finally {
    await client.end();
  }
  const env = pitrEnv(server, pitrPassphrase(server.dataDir, secrets), decodeURIComponent(new URL(url).password));
  await pgbackrest(server, env, ['stanza-create']);
  say(`The services server's WAL is archived to ${server.repository} (pgBackRest, encrypted).`);
}
