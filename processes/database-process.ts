/**
 * The start and the stop that the processes needing PostgreSQL alone share (processes/edge.ts, processes/shipper.ts):
 * their settings, logger, database pool and secrets; and, on the first stop signal, their own close, then the pool,
 * then the exit (1 when the close failed, said in the log).
 */
import type { Knex } from 'knex';
import { type Config, loadConfig } from '../system/config';
import { createKnex, SERVES_WITHOUT_DATABASE } from '../db/knex';
import { createLogger, type Logger } from '../system/logger';
import { secretsFor, type Secrets } from '../system/secrets';
import { onStopSignals } from './stop-signals';

export function databaseProcess(name: string): {
  config: Config & { databaseUrl: string };
  logger: Logger;
  knex: Knex;
  secrets: Secrets;
} {
  const config = loadConfig();
  if (!config.databaseUrl) throw new Error('DATABASE_URL is not set');
  const logger = createLogger(config.logLevel, name);
  // both go on serving (the edge its sites, the shipper its lines) while PostgreSQL is away
  const knex = createKnex(config.databaseUrl, SERVES_WITHOUT_DATABASE);
  const secrets = secretsFor(config);
  return { config: config as Config & { databaseUrl: string }, logger, knex, secrets };
}

/** On the first stop signal (a repeated one is ignored: processes/stop-signals.ts): `close`, the pool, the exit. */
export function closeOnStopSignals(o: { what: string; close: () => Promise<unknown>; knex: Knex; logger: Logger }) {
  let stopping = false;
  onStopSignals(() => {
    if (stopping) return;
    stopping = true;
    void (async () => {
      let code = 0;
      await o.close().catch((err: Error) => {
        o.logger.error({ err: err.message }, `the ${o.what} did not stop cleanly`);
        code = 1;
      });
      await o.knex.destroy();
      process.exit(code);
    })();
  });
}
