import { createKnex } from '../db/knex';
import { migrateLatest } from '../db/migrate';
import { loadConfig } from '../system/config';

// `tsx processes/migrate.ts`: applies every pending migration to DATABASE_URL.
const config = loadConfig();
if (!config.databaseUrl) {
  console.error('DATABASE_URL is not set');
  process.exit(2);
}
const knex = createKnex(config.databaseUrl);
try {
  const applied = await migrateLatest(knex);
  console.log(applied.length ? `Applied migrations: ${applied.join(', ')}` : 'Database is up to date');
} finally {
  await knex.destroy();
}
