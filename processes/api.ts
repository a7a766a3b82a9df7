import { loadConfig } from '../system/config';
import { createDeps } from './deps';
import { startApiServer } from './api-server';
import { onStopSignals } from './stop-signals';

// The API process: `tsx processes/api.ts`, configured by the environment (see README).
const config = loadConfig();
const deps = await createDeps(config, { name: 'api', credentialCache: true });
const server = await startApiServer(deps);
deps.logger.info({ url: `${config.baseUrl}/api/vc/v1` }, 'API listening');
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  server.close();
  server.closeAllConnections();
  await deps.close();
  process.exit(0);
};
onStopSignals(() => void stop());
