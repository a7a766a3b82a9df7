import Koa from 'koa';
import type { Deps } from '../system/deps';
import { allRoutes } from './routes';
import { API_PREFIX } from './lib/paths';
import { buildRouter } from './lib/router';
import type { RouteDef } from './lib/define-route';
import { requestId } from './middleware/request-id';
import { errorHandler, requestLog } from './middleware/error-handler';
import { authenticate } from './middleware/authenticate';
import { securityHeaders } from './middleware/security-headers';

/** The Koa app: middleware stack and the route table. No I/O at import time. */
export function createApp(deps: Deps, routes: RouteDef[] = allRoutes()): Koa {
  const app = new Koa();
  if (deps.config.trustProxyHops > 0) {
    app.proxy = true;
    app.maxIpsCount = deps.config.trustProxyHops;
  }
  app.silent = true; // errors are logged by errorHandler, with the request id
  const router = buildRouter(deps, routes, API_PREFIX);
  app.use(securityHeaders());
  app.use(requestId());
  app.use(requestLog(deps.logger));
  app.use(errorHandler(deps.logger));
  app.use(async (ctx, next) => {
    ctx.state.routeTable = routes;
    await next();
  });
  app.use(authenticate(deps));
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: false }));
  return app;
}
