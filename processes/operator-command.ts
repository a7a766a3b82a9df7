/**
 * What the operator's commands (`npm run hosts`, `npm run keys`) share: a commander program that exits 2 on a usage
 * error and 1 with the message on a failure, and the control plane's database, reached on its machine with its
 * settings (DATABASE_URL, else the embedded server under DATA_DIR).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import type { Knex } from 'knex';
import type { Config } from '../system/config';
import { type Secrets, secretsFor } from '../system/secrets';
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

/** A command's program: usage errors to stderr, and no exit of commander's own (runCommand decides). */
export function operatorProgram(name: string, description: string): Command {
  return new Command(name)
    .description(description)
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
}

/**
 * Runs `program` on this process's arguments, behind a `--` as scripts/bootstrap.mjs passes them (Node 20 would read
 * `hosts -- join --env-file` itself otherwise).
 */
export async function runCommand(program: Command): Promise<void> {
  try {
    const args = process.argv.slice(2);
    await program.parseAsync(args[0] === '--' ? args.slice(1) : args, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2);
    console.error((err as Error).message);
    process.exit(1);
  }
}

/**
 * The control plane's keys, as its settings or its DATA_DIR hold them: never generated here (a key made elsewhere
 * than the control plane would open nothing, and a host given it could not read what the console sealed).
 */
export function controlPlaneSecrets(config: Config): Secrets {
  for (const [given, file, name] of [
    [config.encryptionKey, 'encryption-key.json', 'ENCRYPTION_KEY'],
    [config.tokenHmacKey, 'token-hmac-key.json', 'TOKEN_HMAC_KEY'],
  ] as const)
    if (!given && !existsSync(join(config.dataDir, 'secrets', file)))
      throw new Error(
        `No ${file} under ${config.dataDir}/secrets and no ${name}: run this on the control plane, with its DATA_DIR ` +
          'and settings, after npm start has run once.',
      );
  return secretsFor(config);
}
