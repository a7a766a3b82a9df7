import { loadConfig } from '../system/config';
import { createKnex } from '../db/knex';
import { createLogger } from '../system/logger';
import { startEdge } from '../edge/server';
import { loadSecrets } from '../system/secrets';
import { certificateDir } from '../edge/certificate-files';
import { onStopSignals } from './stop-signals';

// The edge's control plane: `tsx processes/edge.ts`. It needs PostgreSQL only (not Temporal, not the worker),
// and drives HAProxy (its child, in a session of its own), which serves every environment: tenants stay
// served while the worker, or this process itself, is down or restarting (docs/edge.md).
const config = loadConfig();
if (!config.databaseUrl) throw new Error('DATABASE_URL is not set');
const logger = createLogger(config.logLevel, 'edge');
const knex = createKnex(config.databaseUrl);
const secrets = loadSecrets(config.dataDir, {
  tokenHmacKey: config.tokenHmacKey,
  encryptionKey: config.encryptionKey,
  encryptionKeyId: config.encryptionKeyId,
});
const edge = await startEdge({
  knex,
  databaseUrl: config.databaseUrl,
  host: config.environmentBind,
  edgePort: config.edgePort,
  environmentPorts: config.environmentPorts,
  scaleMax: config.scaleMax,
  dataDir: config.dataDir,
  secrets,
  logger,
  trustProxyHops: config.trustProxyHops,
  perAddress: config.edgePerAddress,
  // HAProxy's request lines go to the shipper process's socket (processes/shipper.ts): none passes through here
  requestLog: true,
  // The one exception to "sealed at rest": HAProxy reads the certificates' keys from these files (docs/https.md).
  certificateFiles: { dir: certificateDir(config.dataDir), secrets },
  // HTTPS by SNI with the certificates above; plain HTTP requests of their domains get 308 there
  tls: { port: config.acme.tlsPort, publicPort: config.acme.tlsPublicPort },
});
logger.info({ port: edge.port }, 'edge running');
let stopping = false;
const stop = async () => {
  if (stopping) return; // a repeated signal (processes/stop-signals.ts)
  stopping = true;
  let code = 0;
  await edge.close().catch((err: Error) => {
    logger.error({ err: err.message }, 'the edge did not stop cleanly');
    code = 1;
  });
  await knex.destroy();
  process.exit(code);
};
onStopSignals(() => void stop());
