/**
 * The control plane's database for the operator's commands (`npm run hosts`, `npm run keys`), run on its machine
 * with its settings: DATABASE_URL, else the embedded server under DATA_DIR.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Knex } from 'knex';
import type { Config } from '../system/config';
import { createKnex } from '../db/knex';
import { embeddedPassword } from './embedded-postgres';

export function databaseUrl(c: Config): string {
  if (c.databaseUrl) return c.databaseUrl;
  const port = Number(process.env.EMBEDDED_POSTGRES_PORT || 54329);
  if (!existsSync(join(c.dataDir, 'secrets', 'postgres-password')))
    throw new Error(
      `No DATABASE_URL, and no embedded PostgreSQL under ${c.dataDir}: run this on the control plane, with its settings.`,
    );
  return `postgres://postgres:${encodeURIComponent(embeddedPassword(c.dataDir))}@127.0.0.1:${port}/vc_console`;
}

export async function withKnex<T>(config: Config, work: (knex: Knex) => Promise<T>): Promise<T> {
  const knex = createKnex(databaseUrl(config));
  try {
    return await work(knex);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ECONNREFUSED')
      throw new Error(`The database does not answer (${(err as Error).message}): is the control plane running?`);
    throw err;
  } finally {
    await knex.destroy();
  }
}
