/**
 * What a reshape does to the service databases themselves (activities/machines/reshape.ts runs it).
 *
 * The local provider keeps both shapes on the one services server (SERVICES_DATABASE_URL): "separate" is a
 * `database` server record with its plan and subscription, and the data in a NEW database with a NEW role and
 * password on that server. Why not a second PostgreSQL cluster (initdb with its own port): sandboxed
 * environments reach exactly one host port, the services server's, through the DNAT of sandbox-network.ts,
 * and only once `tenantServicesPort` has proved it demands passwords; a second cluster would need a second
 * opened port, its own superuser secret kept by the worker, and its own lifecycle across worker restarts.
 * What a tenant sees is the same either way: the data copied, a new DATABASE_URL with a new login.
 *
 * Writes stop while the data is copied: the old database is made read-only for new sessions
 * (`default_transaction_read_only`) and its sessions are ended, so the app reconnects and keeps reading while
 * its writes fail until it is restarted on the copy; the old database stays read-only afterwards (nobody
 * writes to a stale copy) until it is discarded, or made writable again when the reshape fails.
 */
import pg from 'pg';
import type { Config } from '../../system/config';
import { disconnectAll, servicesAdminUrl, withAdmin } from './pg-server';

type PgConfig = Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>;

const ident = (name: string) => {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a service identifier: ${name}`);
  return `"${name}"`;
};

/** Stops writes to the database: new sessions are read-only and the open ones are ended. */
export async function freezeDatabase(config: PgConfig, database: string): Promise<void> {
  await withAdmin(config, async (c) => {
    await c.query(`ALTER DATABASE ${ident(database)} SET default_transaction_read_only = on`);
    await disconnectAll(c, database);
  });
}

/** Lets the database take writes again (a reshape that failed). Nothing when it no longer exists. */
export async function thawDatabase(config: PgConfig, database: string): Promise<void> {
  await withAdmin(config, async (c) => {
    const has = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!has.rowCount) return;
    await c.query(`ALTER DATABASE ${ident(database)} RESET default_transaction_read_only`);
    await disconnectAll(c, database);
  });
}

/** The row count of every table of the database outside PostgreSQL's own schemas, by `schema.table`. */
export async function tableCounts(config: PgConfig, database: string): Promise<Record<string, number>> {
  const url = new URL(servicesAdminUrl(config));
  url.pathname = `/${database}`;
  const c = new pg.Client({ connectionString: url.toString() });
  await c.connect();
  try {
    const tables = await c.query<{ schemaname: string; tablename: string }>(
      `SELECT schemaname, tablename FROM pg_tables
        WHERE schemaname NOT IN ('pg_catalog', 'information_schema') AND schemaname NOT LIKE 'pg_toast%'
        ORDER BY schemaname, tablename`,
    );
    const counts: Record<string, number> = {};
    for (const t of tables.rows) {
      const r = await c.query(
        `SELECT count(*)::bigint AS n FROM ${c.escapeIdentifier(t.schemaname)}.${c.escapeIdentifier(t.tablename)}`,
      );
      counts[`${t.schemaname}.${t.tablename}`] = Number(r.rows[0].n);
    }
    return counts;
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** Differences between two sets of counts, readable; empty when they are the same tables with the same rows. */
export function countDifferences(from: Record<string, number>, to: Record<string, number>): string[] {
  const names = [...new Set([...Object.keys(from), ...Object.keys(to)])].sort();
  return names
    .filter((n) => from[n] !== to[n])
    .map((n) => `${n}: ${from[n] ?? 'missing'} rows before, ${to[n] ?? 'missing'} in the copy`);
}
