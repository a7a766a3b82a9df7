/**
 * Putting a copy in place of a service's database on the services server (pg-server.ts holds the server, its
 * URLs and the services' databases and roles): the staging copy `<name>_restore` (a restore, sync or reshape
 * fills it; a reset swaps it in empty), its swap in (`swapInRestored`, or `swapInRestoredKeeping` for a
 * point-in-time restore, which keeps what it replaced), the recovery of a swap cut between its renames, the
 * settling of a put-back that did not complete, and the drop of a kept database. Every statement runs from the
 * admin database (`withAdmin`).
 */
import type pg from 'pg';
import type { Config } from '../system/config';
import { disconnectAll, ident, withAdmin, type ServiceLogin } from './pg-server';

/**
 * A swap interrupted between its two renames (worker killed) leaves `<name>_old` and no `<name>`: the
 * original is renamed back and opened to connections again, so the environment never stays without its data.
 */
async function recoverInterruptedSwap(c: pg.Client, live: string): Promise<void> {
  const has = async (db: string) =>
    ((await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [db])).rowCount ?? 0) > 0;
  if (!(await has(live)) && (await has(`${live}_old`))) {
    await c.query(`ALTER DATABASE ${ident(`${live}_old`)} RENAME TO ${ident(live)}`);
    await c.query(`ALTER DATABASE ${ident(live)} WITH ALLOW_CONNECTIONS true`);
  }
}

/**
 * Creates an empty database `<name>_restore` owned by the role, to restore into; `swapInRestored` then puts it
 * in place of the live one in two renames, so a restore that fails half way never touches the live data.
 */
export async function createRestoreTarget(
  config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>,
  login: ServiceLogin,
): Promise<ServiceLogin> {
  const target = `${login.database}_restore`;
  await withAdmin(config, async (c) => {
    await recoverInterruptedSwap(c, login.database);
    await disconnectAll(c, target);
    await c.query(`DROP DATABASE IF EXISTS ${ident(target)}`);
    // In the live database's tablespace: a database moved to another storage root stays there (storage/).
    const space = await c.query(
      'SELECT t.spcname FROM pg_database d JOIN pg_tablespace t ON t.oid = d.dattablespace WHERE d.datname = $1',
      [login.database],
    );
    const tablespace = space.rows[0]?.spcname as string | undefined;
    await c.query(
      `CREATE DATABASE ${ident(target)} OWNER ${ident(login.role)} TEMPLATE template0${tablespace ? ` TABLESPACE ${ident(tablespace)}` : ''}`,
    );
    await c.query(`REVOKE ALL ON DATABASE ${ident(target)} FROM PUBLIC`);
    await c.query(`GRANT ALL ON DATABASE ${ident(target)} TO ${ident(login.role)}`);
  });
  return { ...login, database: target };
}

/**
 * Swaps the restored copy in. `marker` (the task's id) is written as the live database's comment in the same
 * step, so that after a crash `settleRestoreTarget` can tell whether this task's copy is the live one.
 */
export async function swapInRestored(
  config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>,
  login: ServiceLogin,
  marker?: string,
): Promise<void> {
  const live = login.database;
  const restored = `${live}_restore`;
  const old = `${live}_old`;
  await withAdmin(config, async (c) => {
    await recoverInterruptedSwap(c, live);
    await c.query(`DROP DATABASE IF EXISTS ${ident(old)}`);
    const has = async (db: string) =>
      ((await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [db])).rowCount ?? 0) > 0;
    if (!(await has(restored))) {
      if (await has(live)) return; // a retry after the swap: done already
      throw new Error('the restored database is missing');
    }
    // Connections come back quickly (apps reconnect): refuse them while the names change.
    await c.query(`ALTER DATABASE ${ident(live)} WITH ALLOW_CONNECTIONS false`).catch(() => undefined);
    await disconnectAll(c, live);
    await disconnectAll(c, restored);
    if (await has(live)) await c.query(`ALTER DATABASE ${ident(live)} RENAME TO ${ident(old)}`);
    await c.query(`ALTER DATABASE ${ident(restored)} RENAME TO ${ident(live)}`);
    if (marker) await c.query(`COMMENT ON DATABASE ${ident(live)} IS ${c.escapeLiteral(putBackMark(marker))}`);
    await c.query(`DROP DATABASE IF EXISTS ${ident(old)}`);
  });
}

const putBackMark = (marker: string) => `vc put back by ${marker}`;

/**
 * Swaps the restored copy in and keeps the database it replaces as `keepAs` (closed to connections), both
 * renames in one transaction: the name is either the old database or the copy, never neither (a point-in-time
 * restore keeps what it replaced, in case the second was the wrong one). A retry after the swap finds it done.
 */
export async function swapInRestoredKeeping(
  config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>,
  login: ServiceLogin,
  keepAs: string,
  marker: string,
): Promise<void> {
  const live = login.database;
  const restored = `${live}_restore`;
  await withAdmin(config, async (c) => {
    const has = async (db: string) =>
      ((await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [db])).rowCount ?? 0) > 0;
    if (!(await has(restored))) {
      if (await has(live)) return; // a retry after the swap: done already
      throw new Error('the restored database is missing');
    }
    await c.query(`ALTER DATABASE ${ident(live)} WITH ALLOW_CONNECTIONS false`);
    await disconnectAll(c, live);
    await disconnectAll(c, restored);
    try {
      await c.query('BEGIN');
      await c.query(`ALTER DATABASE ${ident(live)} RENAME TO ${ident(keepAs)}`);
      await c.query(`ALTER DATABASE ${ident(restored)} RENAME TO ${ident(live)}`);
      await c.query(`COMMENT ON DATABASE ${ident(live)} IS ${c.escapeLiteral(putBackMark(marker))}`);
      // the kept one stays open to the service's role (its grants went with it): the rows it wants back are there
      await c.query(`ALTER DATABASE ${ident(keepAs)} WITH ALLOW_CONNECTIONS true`);
      await c.query('COMMIT');
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      await c.query(`ALTER DATABASE ${ident(live)} WITH ALLOW_CONNECTIONS true`).catch(() => undefined);
      throw err;
    }
  });
}

/** Drops a database a point-in-time restore kept (its 24 hours over); none is fine. */
export async function dropKeptDatabase(
  config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>,
  database: string,
): Promise<void> {
  if (!/_kept_\d{14}$/.test(database)) throw new Error(`not a kept database: ${database}`);
  await withAdmin(config, async (c) => {
    await disconnectAll(c, database);
    await c.query(`DROP DATABASE IF EXISTS ${ident(database)}`);
  });
}

/**
 * After a put-back that did not complete (its worker killed on the last attempt, or a failure): a swap cut
 * between its renames is rolled back, the staging copy is dropped, and the answer says whether the live
 * database is the copy of the put-back marked `marker` (swapped in before the end) or still the one before.
 */
export async function settleRestoreTarget(
  config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>,
  login: ServiceLogin,
  marker: string,
): Promise<'put_back' | 'unchanged'> {
  return withAdmin(config, async (c) => {
    await recoverInterruptedSwap(c, login.database);
    const staging = `${login.database}_restore`;
    await disconnectAll(c, staging);
    await c.query(`DROP DATABASE IF EXISTS ${ident(staging)}`);
    const r = await c.query(
      "SELECT shobj_description(oid, 'pg_database') AS comment FROM pg_database WHERE datname = $1",
      [login.database],
    );
    return r.rows[0]?.comment === putBackMark(marker) ? 'put_back' : 'unchanged';
  });
}

/** Empties a database: drops and creates it again, owned by the role (reset-database). */
export async function recreateServiceDatabase(
  config: Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>,
  login: ServiceLogin,
): Promise<void> {
  await createRestoreTarget(config, login);
  await swapInRestored(config, login);
}
