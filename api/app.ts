import Koa from 'koa';
import type { Deps } from '../system/deps';
import { allRoutes } from './routes';
import { API_PREFIX } from './lib/paths';
import { buildRouter } from './lib/router';
import { presentTask } from './tasks/presenter';
import { replayTasks } from './tasks/replay';
import type { RouteDef } from './lib/define-route';
import { requestId } from './middleware/request-id';
import { errorHandler, requestLog } from './middleware/error-handler';
import { authenticate } from './middleware/authenticate';
import { measureRequests, registry, watchCredentialCache, watchHosts, watchTasks } from '../core/metrics';
import { isOperator } from './lib/operator';

/**
 * `GET /metrics` (Prometheus text format): with METRICS_TOKEN set, for `Authorization: Bearer <it>`;
 * without, for loopback clients that name no forwarded client, while TRUST_PROXY_HOPS is 0 (isOperator).
 */
function metricsEndpoint(config: Deps['config']): Koa.Middleware {
  return async (ctx, next) => {
    if (ctx.path !== '/metrics' || ctx.method !== 'GET') return next();
    const allowed = isOperator(ctx, config);
    if (!allowed) {
      ctx.status = 403;
      ctx.body = {
        error: { code: 'forbidden', message: 'Metrics are served to loopback clients, or with METRICS_TOKEN' },
      };
      return;
    }
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  };
}
import { securityHeaders } from './middleware/security-headers';
import { serveConsole } from './console/serve';

/** The Koa app: middleware stack and the route table. No I/O at import time. */
export function createApp(deps: Deps, routes: RouteDef[] = allRoutes()): Koa {
  const app = new Koa();
  if (deps.config.trustProxyHops > 0) {
    app.proxy = true;
    app.maxIpsCount = deps.config.trustProxyHops;
  }
  app.silent = true; // errors are logged by errorHandler, with the request id
  const router = buildRouter(deps, routes, API_PREFIX, { present: presentTask, replay: replayTasks });
  watchTasks(deps.knex);
  watchHosts(deps.knex, deps.config.hostLostSeconds);
  watchCredentialCache(deps.credentials);
  app.use(securityHeaders());
  app.use(requestId());
  app.use(measureRequests());
  app.use(metricsEndpoint(deps.config));
  app.use(requestLog(deps.logger));
  app.use(errorHandler(deps.logger, () => deps.knex));
  app.use(serveConsole(deps.config.consoleDir, deps.config.consoleName));
  app.use(async (ctx, next) => {
    ctx.state.routeTable = routes;
    await next();
  });
  app.use(authenticate(deps));
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: false }));
  return app;
}
