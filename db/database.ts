import pg from 'pg';

/** Create a database (optionally from a template) on the server of `adminUrl`. */
export async function createDatabase(adminUrl: string, name: string, template?: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount) return;
    await client.query(
      `CREATE DATABASE ${pg.escapeIdentifier(name)}${template ? ` TEMPLATE ${pg.escapeIdentifier(template)}` : ''}`,
    );
  } finally {
    await client.end();
  }
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/** The same server, another database. */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}
