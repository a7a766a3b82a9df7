import type { Middleware } from 'koa';

/**
 * Headers every answer carries (API, docs page, device page, errors): `nosniff`, so a browser never
 * reads a JSON or text answer as HTML or script.
 */
export function securityHeaders(): Middleware {
  return async (ctx, next) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    await next();
  };
}
