import { timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

/**
 * Whether the caller is the host's operator, who may read what the console shows of the host itself
 * (`/metrics`, `/health`'s settings and processes): with METRICS_TOKEN set, a request with
 * `Authorization: Bearer <it>`; without, a client on loopback (the socket's own address) whose request names
 * no forwarded client (no `X-Forwarded-For`, no `Forwarded`), and only while TRUST_PROXY_HOPS is 0: behind a
 * reverse proxy on the same host every caller is loopback.
 */
export function isOperator(
  ctx: Pick<Context, 'get' | 'socket'>,
  config: { metricsToken?: string; trustProxyHops: number },
): boolean {
  const token = config.metricsToken;
  if (!token) {
    const { trustProxyHops } = config;
    if (trustProxyHops > 0 || ctx.get('x-forwarded-for') !== '' || ctx.get('forwarded') !== '') return false;
    return LOOPBACK.has(ctx.socket.remoteAddress ?? '');
  }
  const given = Buffer.from(ctx.get('authorization').replace(/^Bearer\s+/i, ''));
  return given.length === Buffer.byteLength(token) && timingSafeEqual(given, Buffer.from(token));
}
