import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { ReadableStream as WebStream } from 'node:stream/web';
import { ApiError, CliError } from './errors';

/** Every path of the API is under this prefix of the console's origin (CONTRACT). */
const API_PATH = '/api/vc/v1';

const NETWORK_RETRIES = 5;
const RATE_LIMIT_RETRIES = 20;
const RETRIED_STATUSES = new Set([502, 503, 504]);
/** What a proxy answers when the API's answer did not reach it. */
const PROXY_STATUSES = new Set([502, 504]);

interface Answer<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
  /** With `stream`: a successful answer that is neither JSON nor text (a snapshot's bytes), unread. */
  stream?: Readable;
}

/** Content types read as text; any other answer may be bytes (a snapshot, an image). */
const TEXTUAL = /json|^text\/|xml|javascript/i;

interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined>;
  /** Send this bearer instead of the client's (logout sends the stored session, whatever VC_TOKEN says). */
  bearer?: string | null;
  /**
   * An `Idempotency-Key` for a task-starting POST, the same on every try: the API gives the same task back for it
   * rather than start a second, so such a write is retried like a read, 503 included (nothing started).
   */
  idempotencyKey?: string;
  /** A successful answer that is not JSON or text comes back as a stream of its bytes, not decoded as text. */
  stream?: boolean;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Seconds to wait from a Retry-After header (seconds or an HTTP date); 1 when absent or unreadable. */
function retryAfterSeconds(value: string | null): number {
  if (!value) return 1;
  if (/^\d+$/.test(value.trim())) return Math.max(1, Number(value));
  const at = Date.parse(value);
  return Number.isNaN(at) ? 1 : Math.max(1, Math.ceil((at - Date.now()) / 1000));
}

/**
 * The API as the client sees it: JSON both ways, a bearer when there is one. Every 429 is waited out
 * per Retry-After and sent again (the API refused it whole, so repeating any method is safe); reads
 * are retried with backoff when the network fails or a proxy answers 502-504, and so are task starts, which
 * carry an Idempotency-Key (`startTask`). Every other write of a signed-in caller carries a key too, so it is
 * retried on a network failure, a proxy's 502 or 504 and while its first try is under way: the API answers a
 * repeat with the first try's answer (api/lib/idempotency.ts). A write without a caller (signing in) is never
 * repeated.
 */
export class Client {
  constructor(
    readonly origin: string,
    private readonly credential: string | undefined,
    /** Where the client says what it waits for (stderr). */
    private readonly notice: (message: string) => void,
  ) {}

  get apiUrl(): string {
    return this.origin + API_PATH;
  }

  get signedIn(): boolean {
    return Boolean(this.credential);
  }

  async get<T = unknown>(path: string, query?: RequestOptions['query']): Promise<T> {
    return (await this.request<T>('GET', path, { query })).body;
  }

  async post<T = unknown>(path: string, body: unknown = {}): Promise<T> {
    return (await this.request<T>('POST', path, { body })).body;
  }

  /** A task-starting POST, with an Idempotency-Key of its own: sent again if the answer is lost, it starts one task. */
  async startTask<T = unknown>(path: string, body: unknown = {}): Promise<T> {
    return (await this.request<T>('POST', path, { body, idempotencyKey: randomUUID() })).body;
  }

  async request<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<Answer<T>> {
    const url = new URL(this.apiUrl + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json, text/plain' };
    const bearer = opts.bearer === undefined ? this.credential : opts.bearer;
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const write = method !== 'GET' && method !== 'HEAD';
    // a write under its key may be sent again: the API answers a repeat with what the first try got
    const key = opts.idempotencyKey ?? (write && bearer ? randomUUID() : undefined);
    if (key) headers['idempotency-key'] = key;
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const read = !write || key !== undefined;
    // a 503 of a write that starts no task may come after its change was kept (an edge that did not apply it in time)
    const retried = !write || opts.idempotencyKey ? RETRIED_STATUSES : PROXY_STATUSES;
    let networkFailures = 0;
    let rateLimited = 0;
    for (;;) {
      let res: Response;
      try {
        res = await fetch(url, { method, headers, body, redirect: 'follow' });
      } catch (err) {
        if (read && networkFailures < NETWORK_RETRIES) {
          const wait = 500 * 2 ** networkFailures++;
          this.notice(`Cannot reach ${this.origin} (${reason(err)}); trying again in ${wait / 1000} s`);
          await sleep(wait);
          continue;
        }
        throw new CliError(
          `Cannot reach the console at ${this.origin} (${reason(err)}): check that it runs and that --api or VC_API names it`,
        );
      }
      if (res.status === 429 && rateLimited < RATE_LIMIT_RETRIES) {
        rateLimited++;
        const wait = retryAfterSeconds(res.headers.get('retry-after'));
        await res.arrayBuffer().catch(() => undefined);
        this.notice(`Rate limited by the console: waiting ${wait} s (Retry-After) before trying again`);
        await sleep(wait * 1000);
        continue;
      }
      if (key && res.status === 409 && networkFailures < NETWORK_RETRIES) {
        // the same key's first try is still under way on the API (its answer was lost on the way): ask again
        const code = (
          (await res
            .clone()
            .json()
            .catch(() => undefined)) as { error?: { code?: string } } | undefined
        )?.error?.code;
        if (code === 'idempotency_key_in_use') {
          const wait = 500 * 2 ** networkFailures++;
          await res.arrayBuffer().catch(() => undefined);
          this.notice(`The console is still working on this request; asking again in ${wait / 1000} s`);
          await sleep(wait);
          continue;
        }
      }
      if (read && retried.has(res.status) && networkFailures < NETWORK_RETRIES) {
        const wait = 500 * 2 ** networkFailures++;
        await res.arrayBuffer().catch(() => undefined);
        this.notice(`The console answered ${res.status}; trying again in ${wait / 1000} s`);
        await sleep(wait);
        continue;
      }
      return this.answer<T>(res, opts.stream);
    }
  }

  private async answer<T>(res: Response, stream?: boolean): Promise<Answer<T>> {
    const type = res.headers.get('content-type') ?? '';
    if (stream && res.ok && res.body && type && !TEXTUAL.test(type)) {
      const bytes = Readable.fromWeb(res.body as WebStream<Uint8Array>);
      return { status: res.status, headers: res.headers, body: undefined as T, text: '', stream: bytes };
    }
    const text = await res.text();
    const json = type.includes('json') && text ? safeJson(text) : undefined;
    if (res.ok) return { status: res.status, headers: res.headers, body: (json ?? text) as T, text };
    const error = (json as { error?: { code?: string; message?: string; fields?: Record<string, string> } } | undefined)
      ?.error;
    throw new ApiError(
      res.status,
      error?.code ?? `http_${res.status}`,
      error?.message ?? `The console answered ${res.status} ${res.statusText}`.trim(),
      error?.fields,
      (json as Record<string, unknown>) ?? {},
    );
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The network reason in a few words (fetch hides it in `cause`). */
function reason(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message ?? String(err);
}
