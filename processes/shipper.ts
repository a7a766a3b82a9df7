import { loadConfig } from '../system/config';
import { createKnex } from '../db/knex';
import { createLogger } from '../system/logger';
import { loadSecrets } from '../system/secrets';
import { startRequestShipper } from './shipper-runtime';
import { onStopSignals } from './stop-signals';

// The request log's shipper: `tsx processes/shipper.ts` (processes/shipper-runtime.ts). It needs PostgreSQL only;
// HAProxy's ring forwards the request lines to its socket under DATA_DIR, and keeps them while it is away.
const config = loadConfig();
if (!config.databaseUrl) throw new Error('DATABASE_URL is not set');
const logger = createLogger(config.logLevel, 'shipper');
const knex = createKnex(config.databaseUrl);
const secrets = loadSecrets(config.dataDir, {
  tokenHmacKey: config.tokenHmacKey,
  encryptionKey: config.encryptionKey,
  encryptionKeyId: config.encryptionKeyId,
});
const running = await startRequestShipper({
  knex,
  databaseUrl: config.databaseUrl,
  dataDir: config.dataDir,
  secrets,
  outbound: config,
  logger,
});
logger.info({}, 'request log shipper running');
let stopping = false;
onStopSignals(() => {
  if (stopping) return; // a repeated signal (processes/stop-signals.ts)
  stopping = true;
  void (async () => {
    let code = 0;
    await running.close().catch((err: Error) => {
      logger.error({ err: err.message }, 'the shipper did not stop cleanly');
      code = 1;
    });
    await knex.destroy();
    process.exit(code);
  })();
});
