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
import type { Config } from '../../system/config';
import { disconnectAll, withAdmin } from '../../host/pg-server';

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

/** Differences between two sets of counts, readable; empty when they are the same tables with the same rows. */
export function countDifferences(from: Record<string, number>, to: Record<string, number>): string[] {
  const names = [...new Set([...Object.keys(from), ...Object.keys(to)])].sort();
  return names
    .filter((n) => from[n] !== to[n])
    .map((n) => `${n}: ${from[n] ?? 'missing'} rows before, ${to[n] ?? 'missing'} in the copy`);
}
