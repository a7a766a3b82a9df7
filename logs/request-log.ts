/**
 * The edge's request log: one line per request (CONTRACT "Logs": time, environment_id, method, path,
 * status, bytes, duration_ms, client_address, user_agent), pushed to the edge's shipper when the answer is
 * done. `path` is the request path WITHOUT its query string (a query may carry tokens or other secrets),
 * and no header but User-Agent is kept (never Authorization or cookies). `bytes` counts the body sent to
 * the client (after compression); `status` is 499 when the client went away before an answer started.
 */
import type http from 'node:http';
import type { LogShipper } from './shipper';

export function pathWithoutQuery(url: string | undefined): string {
  const raw = url ?? '/';
  const i = raw.indexOf('?');
  return (i < 0 ? raw : raw.slice(0, i)).slice(0, 2048);
}

const size = (chunk: unknown): number =>
  typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk instanceof Uint8Array ? chunk.byteLength : 0;

export function trackRequest(
  shipper: LogShipper,
  envId: string,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  clientAddress: string | undefined,
): void {
  const started = performance.now();
  const time = new Date().toISOString();
  let bytes = 0;
  const write = res.write;
  const end = res.end;
  res.write = function (this: http.ServerResponse, chunk: unknown, ...rest: unknown[]) {
    bytes += size(chunk);
    return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof res.write;
  res.end = function (this: http.ServerResponse, chunk?: unknown, ...rest: unknown[]) {
    if (typeof chunk !== 'function') bytes += size(chunk);
    return (end as (...a: unknown[]) => http.ServerResponse).call(this, chunk, ...rest);
  } as typeof res.end;
  res.once('close', () => {
    shipper.push({
      time,
      environment_id: envId,
      type: 'request',
      method: req.method ?? 'GET',
      path: pathWithoutQuery(req.url),
      status: res.headersSent ? res.statusCode : 499,
      bytes,
      duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
      client_address: clientAddress ?? null,
      user_agent: typeof req.headers['user-agent'] === 'string' ? req.headers['user-agent'].slice(0, 512) : null,
    });
  });
}
