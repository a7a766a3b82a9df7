import { loadConfig } from './config';
import { createDeps } from './deps';
import { startWorker } from './worker-runtime';

// The worker process: `tsx system/worker.ts`, configured by the environment (see README).
const config = loadConfig();
const deps = await createDeps(config, { name: 'worker' });
const running = await startWorker(deps);
deps.logger.info({ taskQueue: config.taskQueue, namespace: config.temporalNamespace }, 'worker running');
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await running.shutdown();
  await deps.close();
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
await running.done;
