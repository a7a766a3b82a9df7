import { startEdge } from '../edge/server';
import { certificateDir } from '../edge/certificate-files';
import { closeOnStopSignals, databaseProcess } from './database-process';

// The edge's control plane: `tsx processes/edge.ts`. It needs PostgreSQL only (not Temporal, not the worker),
// and drives HAProxy (its child, in a session of its own), which serves every environment: tenants stay
// served while the worker, or this process itself, is down or restarting (docs/edge.md).
const { config, logger, knex, secrets } = databaseProcess('edge');
const starting = startEdge({
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
  threads: config.edgeThreads,
  // HAProxy's request lines go to the shipper process's socket (processes/shipper.ts): none passes through here
  requestLog: true,
  // The one exception to "sealed at rest": HAProxy reads the certificates' keys from these files (docs/https.md).
  certificateFiles: { dir: certificateDir(config.dataDir), secrets },
  // HTTPS by SNI with the certificates above; plain HTTP requests of their domains get 308 there
  tls: { port: config.acme.tlsPort, publicPort: config.acme.tlsPublicPort },
});
// A stop signal may come as soon as EDGE_PORT accepts (the supervisor's readiness), before the start has
// resolved (the default action would leave HAProxy and Varnish to npm start's clean-up): it waits for the start,
// then closes.
closeOnStopSignals({ what: 'edge', close: async () => (await starting).close(), knex, logger });
const edge = await starting;
logger.info({ port: edge.port }, 'edge running');
