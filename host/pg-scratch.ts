/**
 * Scratch databases on the services server, for the restore drills (activities/data/restore-drill.ts): a
 * database and a login role of the same throwaway name, the role a plain one (no superuser, no CREATEDB, no
 * CREATEROLE) that owns the database and nothing else, CONNECT revoked from PUBLIC. A snapshot is restored
 * as that role, never as the superuser: whatever the tenant's dump runs (functions, index expressions) runs
 * with the rights of a role that can reach nothing but its own scratch copy, and not even the tenant's own role
 * can open it. Dropped, database and role, when the drill ends (or by the next attempt of the same drill).
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Config } from '../system/config';
import { disconnectAll, withAdmin, type ServiceLogin } from './pg-server';

type PgConfig = Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>;

/** Scratch names: `vc_drill_` and 32 hex digits (a task id without its dashes). */
const SCRATCH = /^vc_drill_[0-9a-f]{32}$/;

export function scratchName(taskId: string): string {
  const name = `vc_drill_${taskId.replace(/-/g, '').toLowerCase()}`;
  if (!SCRATCH.test(name)) throw new Error(`not a task id: ${taskId}`);
  return name;
}

const ident = (name: string) => {
  if (!SCRATCH.test(name)) throw new Error(`not a scratch name: ${name}`);
  return `"${name}"`;
};

async function drop(c: pg.Client, name: string): Promise<void> {
  await disconnectAll(c, name);
  await c.query(`DROP DATABASE IF EXISTS ${ident(name)}`);
  await c.query(`DROP ROLE IF EXISTS ${ident(name)}`);
}

/** A fresh scratch database and its role (whatever an earlier attempt of the same name left is dropped first). */
export async function createScratchDatabase(config: PgConfig, name: string): Promise<ServiceLogin> {
  const password = randomBytes(24).toString('base64url');
  await withAdmin(config, async (c) => {
    await drop(c, name);
    await c.query(
      `CREATE ROLE ${ident(name)} LOGIN PASSWORD ${c.escapeLiteral(password)} NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION`,
    );
    await c.query(`CREATE DATABASE ${ident(name)} OWNER ${ident(name)} TEMPLATE template0`);
    await c.query(`REVOKE ALL ON DATABASE ${ident(name)} FROM PUBLIC`);
    await c.query(`GRANT ALL ON DATABASE ${ident(name)} TO ${ident(name)}`);
  });
  return { database: name, role: name, password };
}

/** Drops the scratch database and its role; nothing when they are not there. */
export async function dropScratchDatabase(config: PgConfig, name: string): Promise<void> {
  await withAdmin(config, (c) => drop(c, name));
}

/** Whether a scratch database or role of that name exists (tests, and the drill's own check that it cleaned up). */
export async function scratchExists(config: PgConfig, name: string): Promise<boolean> {
  return withAdmin(config, async (c) => {
    const r = await c.query(
      'SELECT 1 FROM pg_catalog.pg_database WHERE datname = $1 UNION ALL SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1',
      [name],
    );
    return (r.rowCount ?? 0) > 0;
  });
}
