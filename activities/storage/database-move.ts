/**
 * The `database` disk on the local provider: the service database lives in a tablespace of the services
 * server, under `<root>/database/<environment>/<generation>` (generation 0: the server's default one).
 * Moving it copies the database into a tablespace at the new root (CREATE DATABASE ... TEMPLATE, which
 * needs no session on it: the web process is stopped and connections refused meanwhile), checks every
 * table's row count, then swaps the names; the old database is kept, closed to connections, as
 * `<name>_kept` until discarded. The server's files must be on this host (its OS user owns the directory).
 */
import { chmod, chown, mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import type { Config } from '../../system/config';
import { disconnectAll, withAdmin, type ServiceLogin } from '../../host/pg-server';
import { tableCounts } from '../data/row-counts';
import { tablespaceDir, tablespaceName } from '../../db/queries/storage';

type PgConfig = Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>;

const ident = (name: string) => {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a database identifier: ${name}`);
  return `"${name}"`;
};
const keptName = (database: string) => `${database}_kept`;
const stagingName = (database: string) => `${database}_moving`;

/** The OS user owning the services server's data directory: it must own a tablespace's directory. */
async function serverOwner(c: pg.Client): Promise<{ uid: number; gid: number }> {
  const dir = (await c.query('SHOW data_directory')).rows[0].data_directory as string;
  try {
    const st = await stat(dir);
    return { uid: st.uid, gid: st.gid };
  } catch {
    throw new Error(
      `the services server's files (${dir}) are not on this host: its databases cannot move between this host's roots`,
    );
  }
}

const sameCounts = (a: Record<string, number>, b: Record<string, number>) =>
  JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());

/** Makes `dir` (and the directories above it up to `root`) ready to be a tablespace of the server. */
async function prepareTablespaceDir(root: string, dir: string, owner: { uid: number; gid: number }) {
  await mkdir(dir, { recursive: true });
  for (let d = path.dirname(dir); d.startsWith(root); d = path.dirname(d)) {
    const st = await stat(d);
    if ((st.mode & 0o001) === 0) await chmod(d, (st.mode & 0o777) | 0o011);
    if (d === root) break;
  }
  await chown(dir, owner.uid, owner.gid);
  await chmod(dir, 0o700);
}

/**
 * Copies the service database into generation `generation`'s tablespace under `root`, verifies the row
 * counts and swaps it in; the previous database stays as `<name>_kept`. Returns the counts it checked.
 */
export async function moveServiceDatabase(
  config: PgConfig,
  login: ServiceLogin,
  o: { envId: string; root: string; generation: number; say: (line: string) => void },
): Promise<{ tables: number; rows: number }> {
  const db = login.database;
  const staging = stagingName(db);
  const ts = tablespaceName(o.envId, o.generation);
  const dir = tablespaceDir(o.root, o.envId, o.generation);
  if (await alreadySwapped(config, db, ts)) {
    // An earlier attempt swapped the copy in and its worker died before the move was recorded: done already.
    await withAdmin(config, (c) => c.query(`ALTER DATABASE ${ident(db)} WITH ALLOW_CONNECTIONS true`));
    const counts = await tableCounts(config, login);
    o.say(`==> ${db} already lives in ${ts} (an earlier attempt moved it there); the old copy is ${keptName(db)}`);
    return { tables: Object.keys(counts).length, rows: sum(counts) };
  }
  const before = await tableCounts(config, login);
  o.say(`==> ${Object.keys(before).length} tables, ${sum(before)} rows in ${db}`);
  await withAdmin(config, async (c) => {
    const has = async (sql: string, v: string) => ((await c.query(sql, [v])).rowCount ?? 0) > 0;
    if (!(await has('SELECT 1 FROM pg_tablespace WHERE spcname = $1', ts))) {
      await prepareTablespaceDir(o.root, dir, await serverOwner(c));
      await c.query(`CREATE TABLESPACE ${ident(ts)} LOCATION ${c.escapeLiteral(dir)}`);
      o.say(`==> Tablespace ${ts} at ${dir}`);
    }
    await disconnectAll(c, staging);
    await c.query(`DROP DATABASE IF EXISTS ${ident(staging)}`); // a half copy of an earlier attempt
    await c.query(`ALTER DATABASE ${ident(db)} WITH ALLOW_CONNECTIONS false`);
    try {
      await disconnectAll(c, db);
      o.say(`==> Copying ${db} into ${ts}`);
      await c.query(
        `CREATE DATABASE ${ident(staging)} TEMPLATE ${ident(db)} TABLESPACE ${ident(ts)} OWNER ${ident(login.role)}`,
      );
    } catch (err) {
      await c.query(`ALTER DATABASE ${ident(db)} WITH ALLOW_CONNECTIONS true`).catch(() => undefined);
      throw err;
    }
    await c.query(`REVOKE ALL ON DATABASE ${ident(staging)} FROM PUBLIC`);
    await c.query(`GRANT ALL ON DATABASE ${ident(staging)} TO ${ident(login.role)}`);
  });
  const after = await tableCounts(config, { ...login, database: staging });
  if (!sameCounts(before, after)) {
    await withAdmin(config, async (c) => {
      await c.query(`DROP DATABASE IF EXISTS ${ident(staging)}`);
      await c.query(`ALTER DATABASE ${ident(db)} WITH ALLOW_CONNECTIONS true`);
    });
    throw new Error('the copy does not hold the same rows as the database; the database stays where it was');
  }
  o.say(`==> Verified: the copy has the same ${Object.keys(after).length} tables and ${sum(after)} rows`);
  // The swap in one transaction: whatever happens, the environment's name is either its database or the copy.
  await withAdmin(config, async (c) => {
    await disconnectAll(c, db);
    try {
      await c.query('BEGIN');
      await c.query(`ALTER DATABASE ${ident(db)} RENAME TO ${ident(keptName(db))}`);
      await c.query(`ALTER DATABASE ${ident(staging)} RENAME TO ${ident(db)}`);
      await c.query(`ALTER DATABASE ${ident(db)} WITH ALLOW_CONNECTIONS true`);
      await c.query('COMMIT');
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      await c.query(`ALTER DATABASE ${ident(db)} WITH ALLOW_CONNECTIONS true`).catch(() => undefined);
      throw err;
    }
  });
  o.say(`==> ${db} now lives under ${o.root}; the old copy is kept as ${keptName(db)} until discarded`);
  return { tables: Object.keys(after).length, rows: sum(after) };
}

/** Whether `db` already lives in tablespace `ts` with its previous copy kept beside it: this move's swap is done. */
async function alreadySwapped(config: PgConfig, db: string, ts: string): Promise<boolean> {
  return withAdmin(config, async (c) => {
    const where = await c.query(
      `SELECT t.spcname FROM pg_database d JOIN pg_tablespace t ON t.oid = d.dattablespace WHERE d.datname = $1`,
      [db],
    );
    const kept = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [keptName(db)]);
    return where.rows[0]?.spcname === ts && (kept.rowCount ?? 0) > 0;
  });
}

/** Drops the kept copy and, when it had one of its own, its tablespace and directory. */
export async function discardKeptDatabase(
  config: PgConfig,
  login: Pick<ServiceLogin, 'database'>,
  o: { envId: string; root: string; generation: number },
): Promise<void> {
  const kept = keptName(login.database);
  await withAdmin(config, async (c) => {
    await disconnectAll(c, kept);
    await c.query(`DROP DATABASE IF EXISTS ${ident(kept)}`);
    if (o.generation > 0) await c.query(`DROP TABLESPACE IF EXISTS ${ident(tablespaceName(o.envId, o.generation))}`);
  });
  if (o.generation > 0) await rm(tablespaceDir(o.root, o.envId, o.generation), { recursive: true, force: true });
}

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
