import type { Knex } from 'knex';
import type { Client } from '@temporalio/client';
import type { Config } from './config';
import type { Secrets } from './secrets';
import type { Logger } from './logger';
import type { Mailer } from './mail/transport';
import type { Guards } from './guards';
import type { CredentialCache } from './credential-cache';

/**
 * Everything a service, route or activity needs, created once per process and passed down (createDeps,
 * processes/deps.ts, composes it).
 */
export interface Deps {
  config: Config;
  secrets: Secrets;
  knex: Knex;
  logger: Logger;
  temporal: Client;
  mailer: Mailer;
  guards: Guards;
  /**
   * API processes: the token look-up cache, invalidated through LISTEN/NOTIFY (absent: no cache). What it
   * keeps is api/middleware/authenticate.ts's, its one writer and reader.
   */
  credentials?: CredentialCache<unknown>;
  close(): Promise<void>;
}
