import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './schema';

export const API_BASE = '/api/vc/v1';

/** A refusal of the API, as its error body says it (CONTRACT "Bodies and errors"). */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly fields: Record<string, string>;
  /** The running task a 409 names. */
  readonly taskId?: string;
  /** Seconds to wait, from a 429's Retry-After. */
  readonly retryAfter?: number;
  constructor(status: number, body: unknown, retryAfter?: string | null) {
    const err = (body as { error?: Record<string, unknown> } | undefined)?.error ?? {};
    super(typeof err.message === 'string' ? err.message : `The server answered ${status}`);
    this.status = status;
    this.code = typeof err.code === 'string' ? err.code : 'error';
    this.fields = (err.fields as Record<string, string> | undefined) ?? {};
    this.taskId =
      typeof err.task_id === 'string' ? err.task_id : typeof err.task === 'string' ? (err.task as string) : undefined;
    const seconds = retryAfter ? Number(retryAfter) : Number.NaN;
    this.retryAfter = Number.isFinite(seconds) ? seconds : undefined;
  }
}

let csrf: Promise<string> | undefined;

/** The session's CSRF token (GET /session/token), fetched once per sign-in. */
export function csrfToken(): Promise<string> {
  csrf ??= fetch(`${API_BASE}/session/token`, { credentials: 'same-origin' }).then(async (res) => {
    if (!res.ok) {
      csrf = undefined;
      throw new ApiError(res.status, await res.json().catch(() => undefined));
    }
    return ((await res.json()) as { token: string }).token;
  });
  return csrf;
}

/** Forget the CSRF token (after signing in or out: a new session has another). */
export function forgetSession() {
  csrf = undefined;
}

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

const csrfMiddleware: Middleware = {
  async onRequest({ request, schemaPath }) {
    if (SAFE.has(request.method)) return request;
    // Signing in and up come before any session.
    if (['/session', '/signup', '/signup/confirm', '/signup/resend'].includes(schemaPath) && request.method === 'POST')
      return request;
    request.headers.set('X-CSRF-Token', await csrfToken());
    return request;
  },
};

let inFlight = 0;
let waiting: (() => void)[] = [];

/**
 * The API's calls, counted while they are in flight (see `quiet`). A read that the network dropped (the browser
 * aborts what is in flight when the machine's network changes: `net::ERR_NETWORK_CHANGED`, a laptop moving to
 * another Wi-Fi) is asked once more after a moment: it changes nothing. A write is never sent twice.
 */
async function counted(request: Request, init?: RequestInit): Promise<Response> {
  inFlight++;
  try {
    try {
      return await globalThis.fetch(request, init);
    } catch (err) {
      if (!SAFE.has(request.method) || request.signal.aborted || (err as Error).name === 'AbortError') throw err;
      await new Promise((r) => setTimeout(r, 250));
      return await globalThis.fetch(request, init);
    }
  } finally {
    inFlight--;
    // A macrotask later: a page's next calls (started when these answers render) count first.
    if (inFlight === 0) setTimeout(release, 0);
  }
}

function release() {
  if (inFlight > 0) return;
  const now = waiting;
  waiting = [];
  for (const go of now) go();
}

/**
 * Resolves when no call of the API is in flight: what a page shows beside its main data (a notice, a chart,
 * the bell, the breadcrumb's names) waits for it, so that it does not slow the main data down (the browser
 * opens 6 connections at most, and the API answers them on one thread).
 */
export function quiet(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    // The calls started by the same render have not been counted yet: look again after them.
    setTimeout(release, 0);
  });
}

export const api = createClient<paths>({ baseUrl: API_BASE, credentials: 'same-origin', fetch: counted });
api.use(csrfMiddleware);

/** The data of an openapi-fetch answer, or its refusal thrown as an ApiError. */
export async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<NonNullable<T>> {
  const { data, error, response } = await call;
  if (!response.ok) throw new ApiError(response.status, error, response.headers.get('retry-after'));
  return data as NonNullable<T>;
}
