import type { Knex } from 'knex';
import { Model } from 'objection';
import { Client, Connection } from '@temporalio/client';
import type { Config } from './config';
import type { Secrets } from './secrets';
import { loadSecrets } from './secrets';
import { createKnex } from '../db/knex';
import { createLogger, type Logger } from './logger';
import { createMailer, type Mailer } from './mail/transport';
import { createGuards, type Guards } from '../api/middleware/guards';
import { join } from 'node:path';
import { createCredentialCache, type CredentialCache } from '../api/middleware/credential-cache';
import type { TokenFound } from '../api/middleware/authenticate';

/** Everything a service, route or activity needs, created once per process and passed down. */
export interface Deps {
  config: Config;
  secrets: Secrets;
  knex: Knex;
  logger: Logger;
  temporal: Client;
  mailer: Mailer;
  guards: Guards;
  /** API processes: the token look-up cache, invalidated through LISTEN/NOTIFY (absent: no cache). */
  credentials?: CredentialCache<TokenFound>;
  close(): Promise<void>;
}

export async function createDeps(
  config: Config,
  opts: { name?: string; credentialCache?: boolean } = {},
): Promise<Deps> {
  if (!config.databaseUrl) throw new Error('DATABASE_URL is not set');
  if (!config.temporalAddress) throw new Error('TEMPORAL_ADDRESS is not set');
  const logger = createLogger(config.logLevel, opts.name ?? 'vc-console');
  const secrets = loadSecrets(config.dataDir, {
    tokenHmacKey: config.tokenHmacKey,
    encryptionKey: config.encryptionKey,
  });
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
