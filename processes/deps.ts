import { Model } from 'objection';
import { Client, Connection } from '@temporalio/client';
import { join } from 'node:path';
import type { Config } from '../system/config';
import type { Deps } from '../system/deps';
import { secretsFor } from '../system/secrets';
import { createLogger } from '../system/logger';
import { createMailer } from '../system/mail/transport';
import { createCredentialCache } from '../system/credential-cache';
import { createKnex } from '../db/knex';
import { createGuards } from '../api/middleware/guards';
import type { TokenFound } from '../api/middleware/authenticate';

/** A process's Deps (system/deps.ts): its knex, Temporal client, mailer, guards and, asked for, the credential cache. */
export async function createDeps(
  config: Config,
  opts: { name?: string; credentialCache?: boolean } = {},
): Promise<Deps> {
  if (!config.databaseUrl) throw new Error('DATABASE_URL is not set');
  if (!config.temporalAddress) throw new Error('TEMPORAL_ADDRESS is not set');
  const logger = createLogger(config.logLevel, opts.name ?? 'vc-console');
  const secrets = secretsFor(config);
  const knex = createKnex(config.databaseUrl);
  Model.knex(knex);
  const connection = await Connection.connect({ address: config.temporalAddress });
  const temporal = new Client({ connection, namespace: config.temporalNamespace });
  const mailer = createMailer({
    smtpUrl: config.smtpUrl,
    mailDir: join(config.dataDir, 'mail'),
    from: config.mailFrom,
    logger,
  });
  const guards = await createGuards(config, logger);
  const credentials =
    opts.credentialCache && config.credentialCacheSeconds > 0
      ? createCredentialCache<TokenFound>({
          databaseUrl: config.databaseUrl,
          knex,
          logger,
          ttlMs: config.credentialCacheSeconds * 1000,
        })
      : undefined;
  return {
    config,
    secrets,
    knex,
    logger,
    temporal,
    mailer,
    guards,
    credentials,
    async close() {
      await credentials?.close();
      await guards.close();
      mailer.close();
      await connection.close();
      await knex.destroy();
    },
  };
}
