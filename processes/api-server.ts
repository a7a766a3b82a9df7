import { createServer, type Server } from 'node:http';
import { createApp } from '../api/app';
import type { Deps } from '../system/deps';

export async function startApiServer(deps: Deps, port = deps.config.port, host = deps.config.host): Promise<Server> {
  const app = createApp(deps);
  const server = createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
