/**
 * The local provider's database services: each `postgresql` service is a database of its own with a login
 * role of its own on the SERVICES_DATABASE_URL server (default: the console's own server). CONNECT is revoked
 * from PUBLIC, so only the service's role (and superusers) can open it. The environment's processes reach it at
 * SERVICES_HOST and the server's port, or, sandboxed, at their gateway (sandbox-network.ts DNATs that port to
 * SERVICES_HOST, the server's address as this host sees it).
 * Since tenants reach its port, the server must demand a password: `tenantServicesPort` opens it only then.
 * Restoring into a service's database (a staging copy, swapped in once complete) is pg-restore.ts.
 */
import pg from 'pg';
import type { Config } from '../system/config';

export interface ServiceLogin {
  database: string;
  role: string;
  password: string;
}

/** The superuser URL services are created with, as configured (use `adminUrl` to connect with it). */
export function servicesAdminUrl(config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>): string {
  const url = config.servicesDatabaseUrl ?? config.databaseUrl;
  if (!url) throw new Error('SERVICES_DATABASE_URL (or DATABASE_URL) is not set');
  return url;
}

/**
 * Every session the worker opens on the services server, as the superuser or as a service's role, starts
 * with an empty `search_path` (`options=-c search_path=`): a startup option outranks `ALTER DATABASE/ROLE
 * ... SET search_path`, so no name of the session resolves to an object a tenant created, and PostgreSQL's
 * own catalog is searched first. Names are schema-qualified besides (pg_catalog.count, pg_catalog.pg_class).
 */
export const SAFE_SESSION_OPTIONS = '-c search_path=';

/** `url` with the safe session options added to any it has (libpq and node-postgres both read `options`). */
function withSafeOptions(url: string): string {
  const u = new URL(url);
  const had = u.searchParams.get('options');
  u.searchParams.set('options', had ? `${had} ${SAFE_SESSION_OPTIONS}` : SAFE_SESSION_OPTIONS);
  return u.toString();
}

/**
 * The one way to connect as the services server's superuser: to the admin URL's own database (the console's,
 * or `postgres`), never into a tenant's database, with an empty search_path. Nothing of a tenant runs there:
 * CONNECT on it is revoked from PUBLIC (`prepareServicesServer`).
 */
function adminUrl(config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>): string {
  return withSafeOptions(servicesAdminUrl(config));
}

/** Where the worker itself connects for a service (pg_dump, pg_restore): the admin URL's host and port. */
export function serviceUrl(
  config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>,
  login: ServiceLogin,
  host?: string,
): string {
  const admin = new URL(servicesAdminUrl(config));
  const url = new URL(`postgres://${admin.host}`);
  url.hostname = host ?? admin.hostname;
  url.port = admin.port || '5432';
  url.username = login.role;
  url.password = login.password;
  url.pathname = `/${login.database}`;
  return url.toString();
}

/** The worker's own sessions as a service's role (counts, pg_dump, pg_restore): `serviceUrl` with an empty search_path. */
export function serviceSessionUrl(
  config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>,
  login: ServiceLogin,
): string {
  return withSafeOptions(serviceUrl(config, login));
}

/**
 * What the environment's processes get: DATABASE_URL and the PG* variables saying the same. `host` is where
 * they reach the server (their gateway when sandboxed), default SERVICES_HOST.
 */
export function serviceVariables(
  config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl' | 'servicesHost'>,
  login: ServiceLogin,
  host = config.servicesHost,
) {
  const admin = new URL(servicesAdminUrl(config));
  return {
    DATABASE_URL: serviceUrl(config, login, host),
    PGHOST: host,
    PGPORT: admin.port || '5432',
    PGUSER: login.role,
    PGPASSWORD: login.password,
    PGDATABASE: login.database,
  };
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Whether a host name or address is this machine's loopback. */
const isLoopback = (host: string) => LOOPBACK.has(host) || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);

/** Whether the services server listens on this host's loopback. */
function servicesOnLoopback(config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>): boolean {
  const url = config.servicesDatabaseUrl ?? config.databaseUrl;
  return Boolean(url && LOOPBACK.has(new URL(url).hostname));
}

/**
 * Whether sandboxed environments reach the services server at their gateway: it listens on this host's loopback,
 * or SERVICES_HOST names it elsewhere (the gateway's port is DNATed there, sandbox-network.ts).
 */
export function servicesThroughGateway(
  config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl' | 'servicesHost'>,
): boolean {
  return servicesOnLoopback(config) || !isLoopback(config.servicesHost);
}

/**
 * Where this host reaches the services server for its sandboxes (the gateway's DNAT target): SERVICES_HOST
 * (default 127.0.0.1: the server on this host's loopback, as `npm start` runs it, or a tunnel's end).
 */
export function servicesTarget(config: Pick<Config, 'servicesHost'>): string {
  return config.servicesHost === 'localhost' ? '127.0.0.1' : config.servicesHost;
}

/**
 * The services server's port when this host reaches it at SERVICES_HOST (its loopback by default) and it
 * demands a password (a wrong one is refused): the one port sandboxed environments may reach, at their gateway.
 * Else null (nothing is opened), with why.
 */
export async function tenantServicesPort(
  config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl' | 'servicesHost'>,
): Promise<{ port: number | null; trusting?: number; reason?: string }> {
  let admin: URL;
  try {
    admin = new URL(servicesAdminUrl(config));
  } catch {
    return { port: null, reason: 'no services server is set' };
  }
  const port = Number(admin.port || 5432);
  const target = servicesTarget(config);
  if (!servicesThroughGateway(config))
    return {
      port: null,
      reason: `the services server ${admin.hostname}:${port} is not on this host's loopback, and SERVICES_HOST (${config.servicesHost}) does not say where this host reaches it`,
    };
  const probe = new pg.Client({
    host: target,
    port,
    user: decodeURIComponent(admin.username) || 'postgres',
    password: `wrong-${Date.now()}`,
    database: 'postgres',
    connectionTimeoutMillis: 5000,
  });
  try {
    await probe.connect();
    await probe.end().catch(() => undefined);
    return {
      port: null,
      trusting: port,
      reason: `the services server ${target}:${port} accepts a wrong password (trust auth): sandboxed environments cannot reach it`,
    };
  } catch (err) {
    if ((err as { code?: string }).code === '28P01') return { port };
    return {
      port: null,
      reason: `the services server ${target}:${port} did not answer as expected: ${(err as Error).message}`,
    };
  }
}

export async function withAdmin<T>(
  config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>,
  fn: (c: pg.Client) => Promise<T>,
): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl(config) });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** `name` quoted as an identifier; throws unless it is shaped as a service's names are (lower-case letters, digits, `_`). */
export const ident = (name: string) => {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a service identifier: ${name}`);
  return `"${name}"`;
};

/** The server's major version (e.g. "15"). */
export async function serverMajorVersion(config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>): Promise<string> {
  return withAdmin(config, async (c) => {
    const r = await c.query('SHOW server_version_num');
    return String(Math.floor(Number(r.rows[0].server_version_num) / 10000));
  });
}

/** Creates the role and its database (idempotent: an activity retried after a crash finds them there). */
export async function createServiceDatabase(
  config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>,
  login: ServiceLogin,
): Promise<void> {
  await withAdmin(config, async (c) => {
    const role = ident(login.role);
    const password = c.escapeLiteral(login.password);
    const hasRole = await c.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [login.role]);
    await c.query(
      `${hasRole.rowCount ? 'ALTER' : 'CREATE'} ROLE ${role} LOGIN PASSWORD ${password} NOSUPERUSER NOCREATEDB NOCREATEROLE`,
    );
    await closeServerDatabases(c);
    const hasDb = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [login.database]);
    if (!hasDb.rowCount) await c.query(`CREATE DATABASE ${ident(login.database)} OWNER ${role} TEMPLATE template0`);
    await c.query(`REVOKE ALL ON DATABASE ${ident(login.database)} FROM PUBLIC`);
    await c.query(`GRANT ALL ON DATABASE ${ident(login.database)} TO ${role}`);
  });
}

/**
 * Tenants reach this server: no database but their own is theirs to open. CONNECT on `template1`, `postgres`
 * and the admin URL's database (the console's own, with the embedded server) is revoked from PUBLIC
 * (superusers and owners still can), so a tenant's session can neither sit on `template1` (which would make
 * every `CREATE DATABASE` from it fail) nor read a database it does not own. Idempotent.
 */
async function closeServerDatabases(c: pg.Client): Promise<void> {
  await c.query(
    `DO $$ DECLARE d text; BEGIN
       FOR d IN SELECT datname FROM pg_catalog.pg_database
                 WHERE datname IN ('template1', 'postgres', pg_catalog.current_database()) LOOP
         EXECUTE pg_catalog.format('REVOKE CONNECT, TEMPORARY ON DATABASE %I FROM PUBLIC', d);
       END LOOP;
     END $$`,
  );
}

/** Prepares the services server for tenants (the worker's start; createServiceDatabase does it again). */
export async function prepareServicesServer(
  config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>,
): Promise<void> {
  await withAdmin(config, closeServerDatabases);
}

/** Ends every session on a database (before it is renamed or dropped). */
export async function disconnectAll(c: pg.Client, database: string): Promise<void> {
  await c.query(
    'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
    [database],
  );
}

/** Drops the database and its role (environment gone, or a test cleaning up). */
export async function dropServiceDatabase(
  config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>,
  login: Pick<ServiceLogin, 'database' | 'role'>,
): Promise<void> {
  await withAdmin(config, async (c) => {
    // _kept: the copy a storage move left (activities/storage/database-move.ts); _kept_<time>: what a
    // point-in-time restore replaced (activities/data/pitr.ts)
    const kept = await c.query(
      "SELECT datname FROM pg_catalog.pg_database WHERE datname ~ ('^' || $1 || '_kept_[0-9]{14}$')",
      [login.database],
    );
    const restoreKept = kept.rows.map((r) => r.datname as string);
    for (const db of [login.database, `${login.database}_restore`, `${login.database}_kept`, ...restoreKept]) {
      await disconnectAll(c, db);
      await c.query(`DROP DATABASE IF EXISTS ${ident(db)}`);
    }
    await c.query(`DROP ROLE IF EXISTS ${ident(login.role)}`);
  });
}
