/**
 * The row count of every table of a service database, to verify a copy (storage move, reshape).
 *
 * The database is the tenant's: it shapes its schemas, functions, aggregates, operators and its database's
 * settings (`ALTER DATABASE ... SET search_path`). So it is never opened as the services server's superuser:
 * the counts are taken as the service's own role (whatever the tenant planted runs with the tenant's rights
 * at most, as its web process does), in a session whose search_path is empty (a startup option, which
 * outranks the database's settings), with every name schema-qualified (`pg_catalog.count`).
 */
import pg from 'pg';
import type { Config } from '../../system/config';
import { serviceSessionUrl, type ServiceLogin } from '../../host/pg-server';

type PgConfig = Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>;

const TABLES = `
  SELECT n.nspname AS schema, c.relname AS name
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
   WHERE c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'p']::pg_catalog.char[])
     AND n.nspname OPERATOR(pg_catalog.<>) 'information_schema'
     AND NOT n.nspname OPERATOR(pg_catalog.~~) 'pg\\_%'
   ORDER BY 1, 2`;

/** `{ "schema.table": rows }` for every table of the login's database, counted as the login's own role. */
export async function tableCounts(config: PgConfig, login: ServiceLogin): Promise<Record<string, number>> {
  const c = new pg.Client({ connectionString: serviceSessionUrl(config, login) });
  await c.connect();
  try {
    return await countTables(c);
  } finally {
    await c.end().catch(() => undefined);
  }
}

/**
 * The counts, in the session `c` (opened with serviceSessionUrl): inside its transaction when it has one, so
 * a backup counts in the very snapshot its pg_dump reads (snapshot-counts.ts).
 */
export async function countTables(c: pg.Client): Promise<Record<string, number>> {
  const path = (await c.query('SELECT pg_catalog.current_setting($1) AS p', ['search_path'])).rows[0].p;
  if (path !== '' && path !== '""') throw new Error(`the counting session's search_path is not empty: ${path}`);
  const tables = await c.query<{ schema: string; name: string }>(TABLES);
  const counts: Record<string, number> = {};
  for (const t of tables.rows) {
    const q = `SELECT pg_catalog.count(*) AS n FROM ${c.escapeIdentifier(t.schema)}.${c.escapeIdentifier(t.name)}`;
    counts[`${t.schema}.${t.name}`] = Number((await c.query(q)).rows[0].n);
  }
  return counts;
}
