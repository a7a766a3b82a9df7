import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { koaBody } from 'koa-body';
import { stampPartOrder } from './multipart';
import { timingSafeEqual } from 'node:crypto';
import type { Task } from '../../db/models/task';
import type { Deps } from '../../system/deps';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';
import { issuesToFields, type RouteDef } from './define-route';
import { toRouterPath } from './paths';
import { can, roleIn } from './policy';
import type { ResolvedScope } from './scopes';
import { takesIdempotencyKey, withIdempotency } from './idempotency';
import { nulFields } from './nul-bytes';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Who may call, decided from the route's `auth` (token reach), CSRF and the recent sign-in rule. */
function checkCaller(def: RouteDef, ctx: Context): Actor | undefined {
  const actor = ctx.state.actor as Actor | undefined;
  if (def.auth === 'none') return actor;
  if (def.auth === 'signature') return undefined; // the route's signature check authenticates it
  if (!actor) throw errors.unauthenticated();
  if (actor.kind === 'token' && def.auth !== 'token') throw errors.tokenNotAllowed();
  if (actor.kind === 'session' && actor.via === 'session' && !SAFE_METHODS.has(ctx.method)) {
    const given = ctx.get('x-csrf-token');
    if (!given || !sameSecret(given, actor.session.csrf_token)) {
      throw appError(
        'forbidden',
        'Browser session writes need the X-CSRF-Token header, its value from GET /session/token',
      );
    }
  }
  if (def.recentSignInMinutes !== undefined) {
    const signedIn = actor.kind === 'session' ? actor.session.authenticated_at.getTime() : 0;
    if (Date.now() - signedIn > def.recentSignInMinutes * 60_000) throw errors.reauthenticationRequired();
  }
  return actor;
}

function bodyParser(def: RouteDef, limit: number): Middleware | undefined {
  if (!def.body) return undefined;
  const multipart = def.bodyTypes?.includes('multipart') ?? false;
  const files = def.multipartLimits
    ? { maxFiles: def.multipartLimits.maxFiles * 2, maxFileSize: def.multipartLimits.maxFileBytes * 2 }
    : { maxFiles: 5, maxFileSize: 10 * 1024 * 1024 };
  return koaBody({
    json: true,
    jsonStrict: false,
    urlencoded: false,
    text: false,
    // A signed route needs the body as sent (ctx.request.rawBody).
    includeUnparsed: def.auth === 'signature',
    multipart,
    jsonLimit: limit,
    formidable: multipart
      ? {
          ...files,
          maxTotalFileSize: files.maxFiles * files.maxFileSize,
          allowEmptyFiles: true,
          minFileSize: 0,
          onFileBegin: stampPartOrder,
        }
      : undefined,
    onError(err: Error & { httpCode?: number }) {
      // formidable's refusals carry httpCode (413 past its limits, 400 for a broken body), not status.
      if (err.httpCode === 413) {
        throw appError(
          'payload_too_large',
          `Too many files or a file too large: at most ${files.maxFiles} files of ${files.maxFileSize} bytes`,
          {
            fields: { 'attachments[]': 'too many or too large' },
          },
        );
      }
      if (err.httpCode) throw appError('malformed_body', 'The multipart body could not be read');
      throw err;
    },
    parsedMethods: ['POST', 'PUT', 'PATCH', 'DELETE'] as never,
  });
}

function hasBody(ctx: Context): boolean {
  return Number(ctx.get('content-length') || 0) > 0 || Boolean(ctx.get('transfer-encoding'));
}

/** The query parameters a route's schema names (an object schema's keys); anything else is refused. */
function queryNames(def: RouteDef): Set<string> {
  const shape = (def.query as { shape?: Record<string, unknown> } | undefined)?.shape;
  return new Set(shape ? Object.keys(shape) : []);
}

/**
 * The route's scope: the resource its path names, read once; 404 when it is missing or its team is out of
 * the caller's reach, 403 when the caller's role there may not do the route's permission.
 */
async function resolveScope(
  def: RouteDef,
  deps: Deps,
  actor: Actor | undefined,
  params: Record<string, unknown>,
): Promise<ResolvedScope | undefined> {
  if (!def.scope || !actor) return undefined;
  const id = params[def.scope.param ?? 'id'];
  const row = typeof id === 'string' ? await def.scope.load(deps.knex, id) : undefined;
  if (!row) throw errors.notFound(def.scope.what);
  const role = await roleIn(deps.knex, actor, row.team_id);
  if (!role) throw errors.notFound(def.scope.what);
  if (def.permission && !can(role, def.permission)) throw errors.forbidden();
  return { teamId: row.team_id, role, row };
}

/** Test hook (VC_CHECK_RESPONSES=1): a 2xx body that does not match its documented schema is a 500. */
function checkResponse(def: RouteDef, ctx: Context): void {
  const schema = def.responses[ctx.status]?.schema;
  const body = ctx.body;
  if (
    !schema ||
    body === null ||
    body === undefined ||
    typeof body !== 'object' ||
    Buffer.isBuffer(body) ||
    typeof (body as { pipe?: unknown }).pipe === 'function'
  )
    return;
  const r = schema.safeParse(body);
  if (!r.success) {
    throw new Error(
      `${def.method.toUpperCase()} ${def.path} answered ${ctx.status} with a body outside its documented schema: ${JSON.stringify(issuesToFields(r.error.issues))}`,
    );
  }
}

/**
 * How the router answers a task-starting route: the task presented for the caller, and the tasks of an earlier
 * request with the same Idempotency-Key (api/tasks gives both; api/app.ts passes them, so api/lib imports no area).
 */
interface TaskAnswers {
  present: (task: Task, account: { id: string; name: string }) => unknown;
  replay: (deps: Deps, ids: string[], single: boolean) => Promise<unknown>;
}

/** Builds the Koa router from the route table. */
export function buildRouter(deps: Deps, routes: RouteDef[], prefix: string, tasks: TaskAnswers): Router {
  const router = new Router({ prefix });
  for (const def of routes) {
    const parse = bodyParser(def, deps.config.bodyLimitBytes);
    const allowedQuery = queryNames(def);
    const handler: Middleware = async (ctx, next) => {
      const actor = checkCaller(def, ctx);
      // Path parameters that cannot name anything answer 404, like a missing resource.
      let params: unknown = ctx.params ?? {};
      if (def.params) {
        const r = def.params.safeParse(ctx.params ?? {});
        if (!r.success) throw errors.notFound(def.scope?.what);
        params = r.data;
      }
      const scope = await resolveScope(def, deps, actor, params as Record<string, unknown>);
      if (parse && hasBody(ctx)) {
        if (!ctx.is('application/json', ...(def.bodyTypes?.includes('multipart') ? ['multipart/form-data'] : []))) {
          throw appError('unsupported_media_type');
        }
        await parse(ctx, async () => undefined);
      }
      if (def.signature) {
        const raw = (ctx.request as { rawBody?: unknown }).rawBody;
        await def.signature(deps, ctx, params, typeof raw === 'string' ? raw : '');
      }
      const fields: Record<string, string> = {};
      for (const name of Object.keys(ctx.query)) if (!allowedQuery.has(name)) fields[name] = 'unknown query parameter';
      let query: unknown = ctx.query;
      if (def.query) {
        const r = def.query.safeParse(ctx.query, { reportInput: true });
        if (r.success) query = r.data;
        else Object.assign(fields, issuesToFields(r.error.issues));
      }
      let body: unknown = (ctx.request as { body?: unknown }).body;
      if (def.body) {
        const raw =
          body === undefined ||
          (typeof body === 'object' &&
            body !== null &&
            !Array.isArray(body) &&
            Object.keys(body).length === 0 &&
            !hasBody(ctx))
            ? {}
            : body;
        const r = def.body.safeParse(raw, { reportInput: true });
        if (r.success) body = r.data;
        else Object.assign(fields, issuesToFields(r.error.issues));
      }
      // NUL in any string is refused on its field, whatever the route's schema (PostgreSQL refuses it).
      Object.assign(fields, nulFields(ctx.query), def.body ? nulFields((ctx.request as { body?: unknown }).body) : {});
      if (Object.keys(fields).length > 0) throw errors.invalid(fields);
      Object.assign(ctx, { input: { params, query, body }, actor, deps, scope });
      const run = async () => {
        const started = await def.handler(ctx as never);
        if (started && def.startsTask && actor) {
          const account = { id: actor.user.id, name: actor.user.name };
          const task = started as Task | Task[];
          ctx.status = 202;
          ctx.body = Array.isArray(task)
            ? { data: task.map((t) => tasks.present(t, account)) }
            : tasks.present(task, account);
        } else if (def.present && started !== undefined) {
          const present = (record: unknown) => def.present!(record as never, ctx as never);
          ctx.body = Array.isArray(started) ? { data: started.map(present) } : present(started);
        }
      };
      if (actor && takesIdempotencyKey(def)) {
        const replayTasks = def.startsTask
          ? (ids: string[], single: boolean) => tasks.replay(deps, ids, single)
          : undefined;
        await withIdempotency(ctx, deps, actor, body, run, replayTasks);
      } else await run();
      if (deps.config.checkResponses) checkResponse(def, ctx);
      void next;
    };
    router[def.method](def.operationId, toRouterPath(def.path), handler);
  }
  return router;
}
