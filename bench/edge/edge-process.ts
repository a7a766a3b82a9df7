// The edge's control plane as its own process, as in production (processes/edge.ts), on the bench's database:
// it starts HAProxy (under DATA_DIR/edge/haproxy), which serves.
import { createKnex } from '../../db/knex';
import { certificateDir } from '../../edge/certificate-files';
import { startEdge } from '../../edge/server';
import { edgeThreads } from '../../system/config';
import { createLogger } from '../../system/logger';
import { loadSecrets } from '../../system/secrets';

const databaseUrl = process.env.DATABASE_URL!;
const knex = createKnex(databaseUrl);
const dataDir = process.env.DATA_DIR!;
const secrets = loadSecrets(dataDir);
const edge = await startEdge({
  knex,
  databaseUrl,
  host: '127.0.0.1',
  // EDGE_PORT is Pebble's HTTP-01 port (bench/edge/https.ts); unset: any free port.
  edgePort: Number(process.env.EDGE_PORT ?? 0),
  dataDir,
  environmentPorts: (([from, to]) => ({ from, to }))(process.env.ENVIRONMENT_PORTS!.split('-').map(Number)),
  secrets,
  // EDGE_THREADS as npm start takes it (the bare HAProxy gets the same, bench/edge/bare.ts)
  threads: edgeThreads(process.env),
  // EDGE_CONNECTION_RATE_PER_ADDRESS set by the world (wrk and the TLS handshakes come from one loopback address)
  perAddress: {
    connections: Number(process.env.EDGE_CONNECTIONS_PER_ADDRESS || 100),
    connectionRate: Number(process.env.EDGE_CONNECTION_RATE_PER_ADDRESS || 200),
  },
  // BENCH_DEBUG=1: the edge's warnings (a reload that failed, a retry) on stdout
  ...(process.env.BENCH_DEBUG ? { logger: createLogger('info', 'bench-edge') } : {}),
  // HTTPS by SNI with the certificates issued by Pebble, as processes/edge.ts does (EDGE_TLS_PORT set).
  ...(process.env.EDGE_TLS_PORT
    ? {
        certificateFiles: { dir: certificateDir(dataDir), secrets },
        tls: { port: Number(process.env.EDGE_TLS_PORT), publicPort: Number(process.env.EDGE_TLS_PORT) },
      }
    : {}),
  // The request log on, as under npm start: its lines go to the shipper process (bench/edge/world.ts starts it).
  requestLog: true,
});
process.send?.({ port: edge.port });
process.on('SIGTERM', async () => {
  await edge.close();
  await knex.destroy();
  process.exit(0);
});
