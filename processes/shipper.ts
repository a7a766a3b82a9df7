import { startRequestShipper } from './shipper-runtime';
import { closeOnStopSignals, databaseProcess } from './database-process';

// The request log's shipper: `tsx processes/shipper.ts` (processes/shipper-runtime.ts). It needs PostgreSQL only;
// HAProxy's ring forwards the request lines to its socket under DATA_DIR, and keeps them while it is away.
const { config, logger, knex, secrets } = databaseProcess('shipper');
const starting = startRequestShipper({
  knex,
  databaseUrl: config.databaseUrl,
  dataDir: config.dataDir,
  secrets,
  outbound: config,
  logger,
});
// A stop signal may come as soon as the socket accepts (the supervisor's readiness), before the start has
// resolved: it waits for the start, then closes.
closeOnStopSignals({ what: 'shipper', close: async () => (await starting).close(), knex, logger });
await starting;
logger.info({}, 'request log shipper running');
