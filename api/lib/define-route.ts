import type { Context } from 'koa';
import { z } from 'zod';
import type { Actor } from './actor';
import type { Deps } from '../../system/deps';

/**
 * Who may call a route:
 * - 'none': anyone (sign-up, sign-in, the OpenAPI document).
 * - 'session': a signed-in caller (browser session, or the command line's `vcs_` bearer).
 *   A personal access token gets 403 token_not_allowed.
 * - 'token': a signed-in caller or a personal access token (the spec's "token-reachable" set).
 */
export type AuthMode = 'none' | 'session' | 'token';
export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface ResponseDef {
  description: string;
  schema?: z.ZodType;
  contentType?: string;
}

export interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
}

export interface RouteContext<P, Q, B> extends Context {
  input: RouteInput<P, Q, B>;
  actor: Actor;
  deps: Deps;
}

export interface RouteDef<P = any, Q = any, B = any> {
  method: Method;
  /** OpenAPI-style path relative to /api/vc/v1, e.g. `/teams/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags?: string[];
  auth: AuthMode;
  /** Documentation of the team permission the service checks (see api/lib/policy.ts). */
  permission?: string;
  /** Demands a sign-in younger than this many minutes (403 reauthentication_required). */
  recentSignInMinutes?: number;
  /** Body media types accepted; JSON by default. */
  bodyTypes?: Array<'json' | 'multipart'>;
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  body?: z.ZodType<B>;
  responses: Record<number, ResponseDef>;
  handler: (ctx: RouteContext<P, Q, B>) => unknown | Promise<unknown>;
}

/** Declares one endpoint; the same schemas validate requests and build the OpenAPI document. */
export function defineRoute<P = Record<string, never>, Q = Record<string, never>, B = undefined>(
  def: RouteDef<P, Q, B>,
): RouteDef<P, Q, B> {
  if (!def.operationId || !def.summary || Object.keys(def.responses).length === 0) {
    throw new Error(`route ${def.method.toUpperCase()} ${def.path} needs an operationId, a summary and its responses`);
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
        expected === 'int' ? 'a whole number' : expected === 'array' || expected === 'object' ? `an ${expected}` : `a ${expected}`;
      return `must be ${noun}`;
    }
  }
  return issue.message;
}
