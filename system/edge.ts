import { loadConfig } from './config';
import { createKnex } from '../db/knex';
import { createLogger } from './logger';
import { startEdge } from '../edge/server';
import { loadSecrets } from './secrets';

// The edge process: `tsx system/edge.ts`. It needs PostgreSQL only (not Temporal, not the worker), so
// environments keep being served while the worker is down or restarting.
const config = loadConfig();
if (!config.databaseUrl) throw new Error('DATABASE_URL is not set');
const logger = createLogger(config.logLevel, 'edge');
const knex = createKnex(config.databaseUrl);
const edge = await startEdge({
  knex,
  databaseUrl: config.databaseUrl,
  host: config.environmentBind,
  edgePort: config.edgePort,
  logger,
  trustProxyHops: config.trustProxyHops,
  logs: {
    dataDir: config.dataDir,
    secrets: loadSecrets(config.dataDir, { tokenHmacKey: config.tokenHmacKey, encryptionKey: config.encryptionKey }),
    outbound: config,
  },
});
logger.info({ port: edge.port }, 'edge running');
const stop = async () => {
  await edge.close();
  await knex.destroy();
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
