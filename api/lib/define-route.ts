import type { Context } from 'koa';
import type { z } from 'zod';
import type { Actor } from '../../core/actor';
import type { Deps } from '../../system/deps';
import type { Action } from './policy';
import type { ResolvedScope, Scope, ScopeRow } from './scopes';
import type { Task } from '../../db/models/task';

/**
 * Who may call a route:
 * - 'none': anyone (sign-up, sign-in, the OpenAPI document).
 * - 'session': a signed-in caller (browser session, or the command line's `vcs_` bearer).
 *   A personal access token gets 403 token_not_allowed.
 * - 'token': a signed-in caller or a personal access token (the spec's "token-reachable" set).
 * - 'signature': no session or token at all (a machine calls: the git hook); the route's `signature`
 *   check authenticates the request from its raw body before anything else (401 without one, 403 wrong).
 *   No CSRF, no token reach, no actor.
 */
type AuthMode = 'none' | 'session' | 'token' | 'signature';
type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface ResponseDef {
  description: string;
  schema?: z.ZodType;
  contentType?: string;
}

/**
 * What a handler returns: nothing (it set the answer); for a `startsTask` route the task(s) it started; for a
 * route with `present`, the record (or the list of records) that the router presents.
 */
type Started = Task | Task[] | undefined | void;

interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
}

interface RouteContext<P, Q, B, R extends ScopeRow = ScopeRow> extends Context {
  input: RouteInput<P, Q, B>;
  actor: Actor;
  deps: Deps;
  /** Set when the route has a `scope`: the resource its path names, its team and the caller's role there. */
  scope: ResolvedScope<R>;
}

/**
 * One endpoint. `RouteDef` alone (the route table's element) is any route: its handler and signature check are
 * methods, so a route typed for its own params, query, body and scope row is one of them.
 */
export interface RouteDef<P = unknown, Q = unknown, B = unknown, R extends ScopeRow = ScopeRow, T = unknown> {
  method: Method;
  /** OpenAPI-style path relative to /api/vc/v1, e.g. `/teams/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags?: string[];
  auth: AuthMode;
  /**
   * The team action this route needs (api/lib/policy.ts). With a `scope`, the router enforces it for the
   * resource's team before validating the request (403 forbidden); without one (lists, creations naming
   * their team in the body) the service applies it. Published as `x-permission`.
   */
  permission?: Action;
  /** How to find the team of the resource the path names (api/lib/scopes.ts); 404 when missing or out of reach. */
  scope?: Scope<R>;
  /**
   * The route starts tasks: it honours `Idempotency-Key` (api/lib/idempotency.ts), and a handler that returns
   * the task it started is answered 202 with it, presented (api/tasks/presenter.ts) with the caller as account;
   * one that returns a list of tasks is answered 202 with `{data: [tasks]}`, each presented alike.
   */
  startsTask?: boolean;
  /** Demands a sign-in younger than this many minutes (403 reauthentication_required). */
  recentSignInMinutes?: number;
  /** Body media types accepted; JSON by default. */
  bodyTypes?: Array<'json' | 'multipart'>;
  /**
   * Multipart: the files the route accepts. The parser stops at twice these (413) so that the service can
   * name the part at fault within them; default 5 files of 10 MB.
   */
  multipartLimits?: { maxFiles: number; maxFileBytes: number };
  /**
   * auth 'signature': checks the request's signature over its raw body (throws 401/403); runs after the
   * path parameters are read and before the query and body are validated.
   */
  signature?(deps: Deps, ctx: Context, params: P, rawBody: string): Promise<void>;
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  body?: z.ZodType<B>;
  responses: Record<number, ResponseDef>;
  /**
   * Presents the record the handler returned (STYLE: services return records, routes present them). A list
   * is answered as `{data: [...]}`, each element presented. The status is the handler's (`ctx.status = 201`
   * before it returns), else 200.
   */
  present?(record: T, ctx: RouteContext<P, Q, B, R>): unknown;
  /**
   * Sets the answer on ctx; or (a `startsTask` route) returns the task (or the tasks) it started; or (a route
   * with `present`) returns the record or the list of records to present.
   */
  handler(ctx: RouteContext<P, Q, B, R>): Started | T | T[] | Promise<Started | T | T[]>;
}

/** Declares one endpoint; the same schemas validate requests and build the OpenAPI document. */
export function defineRoute<
  P = Record<string, never>,
  Q = Record<string, never>,
  B = undefined,
  R extends ScopeRow = ScopeRow,
  T = unknown,
>(def: RouteDef<P, Q, B, R, T>): RouteDef<P, Q, B, R, T> {
  if (!def.operationId || !def.summary || Object.keys(def.responses).length === 0) {
    throw new Error(`route ${def.method.toUpperCase()} ${def.path} needs an operationId, a summary and its responses`);
  }
  if ((def.auth === 'signature') !== Boolean(def.signature)) {
    throw new Error(`route ${def.method.toUpperCase()} ${def.path}: auth 'signature' goes with a signature check`);
  }
  if (def.present && def.startsTask) {
    throw new Error(`route ${def.method.toUpperCase()} ${def.path}: a task-starting route is presented by the router`);
  }
  return def;
}

/** Turns zod issues into `{field: reason}`, every failing field, dotted paths. */
export function issuesToFields(issues: z.core.$ZodIssue[], prefix = ''): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const issue of issues) {
    let path = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const k = [prefix, path, key].filter(Boolean).join('.');
        fields[k] ??= 'unknown field';
      }
      continue;
    }
    path = [prefix, path].filter(Boolean).join('.') || 'body';
    fields[path] ??= humanMessage(issue);
  }
  return fields;
}

function humanMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type') {
    // Parsed with reportInput (api/lib/router.ts): a missing field is "required", whatever the schema says.
    if ('input' in issue && issue.input === undefined) return 'is required';
    if (issue.message.startsWith('Invalid input')) {
      const expected = issue.expected as string;
      const noun =
        expected === 'int'
          ? 'a whole number'
          : expected === 'array' || expected === 'object'
            ? `an ${expected}`
            : `a ${expected}`;
      return `must be ${noun}`;
    }
  }
  return issue.message;
}
