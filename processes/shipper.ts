import { startRequestShipper } from './shipper-runtime';
import { closeOnStopSignals, databaseProcess } from './database-process';

// The request log's shipper: `tsx processes/shipper.ts` (processes/shipper-runtime.ts). It needs PostgreSQL only;
// HAProxy's ring forwards the request lines to its socket under DATA_DIR, and keeps them while it is away.
const { config, logger, knex, secrets } = databaseProcess('shipper');
const running = await startRequestShipper({
  knex,
  databaseUrl: config.databaseUrl,
  dataDir: config.dataDir,
  secrets,
  outbound: config,
  logger,
});
logger.info({}, 'request log shipper running');
closeOnStopSignals({ what: 'shipper', close: () => running.close(), knex, logger });
