import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './schema';
import { KEPT_WRITES, TASK_STARTS } from './keyed-writes';

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

/** The header under which a write may be sent again (api/lib/idempotency.ts). */
const IDEMPOTENCY_KEY = 'Idempotency-Key';

/** A fresh key: 128 random bits in hex (crypto.randomUUID needs a secure context; the console may be served over http). */
function newKey(): string {
  return [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * A write carries a key of its own (every one the API keeps under a key: all but signing in and uploads), so that it
 * can be sent again when its answer is lost (see `counted`), by the console or by the browser itself.
 */
const idempotencyMiddleware: Middleware = {
  onRequest({ request, schemaPath }) {
    const operation = `${request.method} ${schemaPath}`;
    if (TASK_STARTS.has(operation)) taskStarts.add(request);
    if ((TASK_STARTS.has(operation) || KEPT_WRITES.has(operation)) && !request.headers.has(IDEMPOTENCY_KEY))
      request.headers.set(IDEMPOTENCY_KEY, newKey());
    return request;
  },
};

/** The requests that start tasks (openapi-fetch sends the request its middlewares return). */
const taskStarts = new WeakSet<Request>();

let inFlight = 0;
let waiting: (() => void)[] = [];

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The writes without a key that the API answers as one when they come again within 30 s (the same sign-up, a code's
 * confirmation): sent again as a keyed write is, its sends ending well within that window.
 */
const REPEATABLE = new Set([`${API_BASE}/signup`, `${API_BASE}/signup/confirm`]);

const repeatable = (request: Request) => request.method === 'POST' && REPEATABLE.has(new URL(request.url).pathname);

/**
 * The API's calls, counted while they are in flight (see `quiet`). A read that the network dropped (the browser
 * aborts what is in flight when the machine's network changes: `net::ERR_NETWORK_CHANGED`, a laptop moving to
 * another Wi-Fi) is asked once more after a moment: it changes nothing. A write is sent again under its
 * Idempotency-Key (`sendKept`), and so are a sign-up and a confirmation (REPEATABLE); one without a key otherwise
 * (signing in, an upload) is never sent twice by the console.
 */
async function counted(request: Request, init?: RequestInit): Promise<Response> {
  inFlight++;
  try {
    if (request.headers.has(IDEMPOTENCY_KEY) || repeatable(request)) return await sendKept(request, init);
    try {
      return await globalThis.fetch(request, init);
    } catch (err) {
      if (!SAFE.has(request.method) || request.signal.aborted || (err as Error).name === 'AbortError') throw err;
      await pause(250);
      return await globalThis.fetch(request, init);
    }
  } finally {
    inFlight--;
    // A macrotask later: a page's next calls (started when these answers render) count first.
    if (inFlight === 0) setTimeout(release, 0);
  }
}

/** The waits before each new send of a write: ~12 s in all, then what came last is shown. */
const RESEND_WAITS_MS = [250, 500, 1000, 2000, 3000, 5000];

/**
 * A write, sent again under the same Idempotency-Key while its answer is lost (the network dropped it), a proxy
 * answers 502 or 504, or the API answers 409 `idempotency_key_in_use` (the first send is still under way); a task
 * start also while the API answers 503 (Temporal or the database away: nothing started; its Retry-After is
 * followed, up to 5 s). The API answers a repeat with what the first send got (a task start: the task it started),
 * so a click changes things once however often its request is sent.
 */
async function sendKept(request: Request, init?: RequestInit): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const last = attempt >= RESEND_WAITS_MS.length;
    let wait = RESEND_WAITS_MS[attempt];
    try {
      const res = await globalThis.fetch(request.clone(), init);
      if (last || !(await worthAgain(request, res))) return res;
      const after = Number(res.headers.get('retry-after'));
      if (Number.isFinite(after) && after > 0) wait = Math.min(after * 1000, 5000);
    } catch (err) {
      if (last || request.signal.aborted || (err as Error).name === 'AbortError') throw err;
    }
    await pause(wait);
  }
}

/** Whether an answer to a keyed write says to send it again (see `sendKept`). */
async function worthAgain(request: Request, res: Response): Promise<boolean> {
  if ([502, 504].includes(res.status)) return true;
  // a 503 of another write may come after its change was saved (an edge that did not apply it in time): shown as is
  if (res.status === 503) return taskStarts.has(request);
  if (res.status !== 409) return false;
  const body = (await res
    .clone()
    .json()
    .catch(() => undefined)) as { error?: { code?: string } } | undefined;
  return body?.error?.code === 'idempotency_key_in_use';
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
api.use(csrfMiddleware, idempotencyMiddleware);

/** The data of an openapi-fetch answer, or its refusal thrown as an ApiError. */
export async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<NonNullable<T>> {
  const { data, error, response } = await call;
  if (!response.ok) throw new ApiError(response.status, error, response.headers.get('retry-after'));
  return data as NonNullable<T>;
}
