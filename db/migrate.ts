import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Knex } from 'knex';

const migrationsDir = join(dirname(fileURLToPath(import.meta.url)), 'migrations');

/** Migrations are the files `db/migrations/NNN_name.ts`, applied in name order. */
class DirectoryMigrationSource implements Knex.MigrationSource<string> {
  async getMigrations(): Promise<string[]> {
    return readdirSync(migrationsDir)
      .filter((f) => /^\d+_.+\.ts$/.test(f))
      .sort();
  }
  getMigrationName(migration: string): string {
    return migration.replace(/\.ts$/, '');
  }
  async getMigration(migration: string): Promise<Knex.Migration> {
    return import(pathToFileURL(join(migrationsDir, migration)).href);
  }
}

export async function migrateLatest(knex: Knex): Promise<string[]> {
  const [, applied] = await knex.migrate.latest({ migrationSource: new DirectoryMigrationSource() });
  return applied as string[];
}
