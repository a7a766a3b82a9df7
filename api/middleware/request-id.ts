import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';

/** A request id on every answer: the caller's X-Request-Id when it is sane, else a new one. */
export function requestId(): Middleware {
  return async (ctx, next) => {
    const given = ctx.get('x-request-id');
    const id = /^[A-Za-z0-9._-]{8,64}$/.test(given) ? given : randomUUID();
    ctx.state.requestId = id;
    ctx.set('X-Request-Id', id);
    await next();
  };
}
