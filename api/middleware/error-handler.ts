import type { Knex } from 'knex';
import type { Middleware } from 'koa';
import { isGrpcServiceError, ServiceError } from '@temporalio/client';
import { ZodError } from 'zod';
import {
  NotFoundError,
  UniqueViolationError,
  ForeignKeyViolationError,
  CheckViolationError,
  DataError,
} from 'objection';
import { appError, AppError } from '../../core/errors';
import { issuesToFields } from '../lib/define-route';
import type { Logger } from '../../system/logger';

function toAppError(err: unknown): AppError | undefined {
  if (err instanceof AppError) return err;
  if (err instanceof ZodError) return appError('invalid', undefined, { fields: issuesToFields(err.issues) });
  if (err instanceof UniqueViolationError) {
    const column = err.columns?.filter((c) => !c.endsWith('_id') || err.columns.length === 1).at(-1);
    return appError('conflict', undefined, { fields: column ? { [column]: 'already exists' } : undefined });
  }
  if (err instanceof NotFoundError) return appError('not_found');
  const status =
    (err as { status?: number; statusCode?: number }).status ?? (err as { statusCode?: number }).statusCode;
  const expose = (err as { expose?: boolean }).expose;
  if (status === 400 && expose !== false) return appError('malformed_body');
  if (status === 413) return appError('payload_too_large');
  if (status === 415) return appError('unsupported_media_type');
  return undefined;
}

/** gRPC's DEADLINE_EXCEEDED and UNAVAILABLE: the Temporal server did not answer (down, restarting, unreachable). */
const NO_ANSWER = new Set([4, 14]);

/** Whether a call to Temporal failed because its server did not answer (the client's retries spent). */
function temporalUnreachable(err: unknown): boolean {
  const grpc = err instanceof ServiceError ? err.cause : err;
  return isGrpcServiceError(grpc) && NO_ANSWER.has(grpc.code);
}

/** PostgreSQL's SQLSTATEs of a server that cannot serve: class 08 (connection), 57P01-57P03, 53300 (too many). */
const SERVER_AWAY = /^(08...|57P0[123]|53300)$/;
/** A connection to the server that failed, from node's sockets. */
const SOCKET_FAILED = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOENT']);

/** Where `knex` connects: its URL's host and port (host: a socket's directory for a unix socket). */
function databaseAddress(knex: Knex): { host: string; port: number } {
  const c = knex.client.config.connection as string | { connectionString?: string; host?: string; port?: number };
  const url = typeof c === 'string' ? c : c?.connectionString;
  if (url) {
    const u = new URL(url);
    return { host: u.searchParams.get('host') ?? decodeURIComponent(u.hostname), port: Number(u.port || 5432) };
  }
  return { host: typeof c === 'object' ? (c.host ?? '') : '', port: Number((typeof c === 'object' && c.port) || 5432) };
}

/**
 * Whether a query failed because the API's PostgreSQL could not be reached or would not serve: no connection of the
 * pool in time, a SQLSTATE above, or a socket error on a connection to the database's own address (the same codes
 * from another connection, such as an outbound request, are not the database's).
 */
function databaseUnreachable(err: unknown, knex: Knex): boolean {
  const e = err as {
    name?: string;
    code?: unknown;
    address?: unknown;
    port?: unknown;
    nativeError?: { code?: unknown };
  };
  if (e?.name === 'KnexTimeoutError') return true;
  const code = String(e?.nativeError?.code ?? e?.code ?? '');
  if (SERVER_AWAY.test(code)) return true;
  if (!SOCKET_FAILED.has(code)) return false;
  const db = databaseAddress(knex);
  return (
    (typeof e.port === 'number' && e.port === db.port) ||
    (typeof e.address === 'string' && db.host.startsWith('/') && e.address.startsWith(db.host))
  );
}

/** The service behind the API that did not answer, named for the 503 (to be tried again, never a 500); else none. */
function serviceAway(err: unknown, knex: Knex): string | undefined {
  if (temporalUnreachable(err)) return 'The task service (Temporal)';
  if (databaseUnreachable(err, knex)) return 'The database';
  return undefined;
}

/** A 503 of a service that does not answer: a client may try again in a few seconds. */
const RETRY_AFTER = { 'Retry-After': '5' };

/** Maps every error to the one error body; unknown errors are 500, logged with the request id. */
export function errorHandler(logger: Logger, knexOf: () => Knex): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw appError('not_found', `No route ${ctx.method} ${ctx.path}`);
      }
      if (ctx.status === 405 && !ctx.body) {
        // The router has set Allow; say it in the body too.
        throw appError(
          'method_not_allowed',
          `${ctx.method} is not allowed here; allowed: ${ctx.response.get('Allow')}`,
        );
      }
    } catch (err) {
      let appErr = toAppError(err);
      const away = appErr ? undefined : serviceAway(err, knexOf());
      if (away) {
        logger.warn(
          { err, requestId: ctx.state.requestId, method: ctx.method, path: ctx.path },
          `${away} did not answer`,
        );
        appErr = appError('unavailable', `${away} does not answer right now; try again shortly`, {
          headers: RETRY_AFTER,
        });
      }
      if (!appErr) {
        const dbError =
          err instanceof ForeignKeyViolationError || err instanceof CheckViolationError || err instanceof DataError;
        logger.error(
          { err, requestId: ctx.state.requestId, method: ctx.method, path: ctx.path, dbError },
          'unhandled error',
        );
        appErr = appError('internal', `Something went wrong on our side; quote request id ${ctx.state.requestId}`);
      }
      ctx.status = appErr.status;
      for (const [k, v] of Object.entries(appErr.headers ?? {})) ctx.set(k, v);
      ctx.body = appErr.toBody();
    }
  };
}

/** One line per request: method, path, status, time. Never headers, bodies or query strings. */
export function requestLog(logger: Logger): Middleware {
  return async (ctx, next) => {
    const start = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      logger.info(
        {
          requestId: ctx.state.requestId,
          method: ctx.method,
          path: ctx.path,
          status: ctx.status,
          ms: Math.round(ms * 10) / 10,
          via: ctx.state.actor?.via,
        },
        'request',
      );
    }
  };
}
