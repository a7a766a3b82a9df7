/**
 * A JSON answer as a test reads it: whatever the server sent. The test's expectations check its shape, and
 * the router checks every 2xx body against its documented strict schema (VC_CHECK_RESPONSES). The one
 * `any` of the tests, so that `res.body.id` reads without a cast in each of them.
 */
// biome-ignore lint/suspicious/noExplicitAny: an answer's shape is what the test asserts
export type AnswerBody = any;

/** A small HTTP client for tests: a cookie jar, the CSRF header for session writes, or a bearer. */
export interface Res<T = AnswerBody> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export class Agent {
  readonly cookies = new Map<string, string>();
  csrf?: string;
  bearer?: string;

  constructor(readonly apiUrl: string) {}

  withBearer(token: string): Agent {
    const a = new Agent(this.apiUrl);
    a.bearer = token;
    return a;
  }

  async request<T = AnswerBody>(
    method: string,
    path: string,
    opts: {
      body?: unknown;
      headers?: Record<string, string>;
      rawBody?: string | Buffer | FormData;
      noCsrf?: boolean;
    } = {},
  ): Promise<Res<T>> {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (this.bearer) headers.authorization = `Bearer ${this.bearer}`;
    if (this.csrf && !opts.noCsrf && !['GET', 'HEAD'].includes(method.toUpperCase()))
      headers['x-csrf-token'] ??= this.csrf;
    let body: string | Buffer | FormData | undefined;
    if (opts.rawBody !== undefined) body = opts.rawBody;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(this.apiUrl + path, {
      method,
      headers,
      body: body as BodyInit | undefined,
      redirect: 'manual',
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair.indexOf('=');
      const name = pair.slice(0, i).trim();
      const value = pair.slice(i + 1).trim();
      if (!value || /max-age=0|expires=thu, 01 jan 1970/i.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }

  get<T = AnswerBody>(path: string, opts?: { headers?: Record<string, string> }) {
    return this.request<T>('GET', path, opts);
  }
  post<T = AnswerBody>(path: string, body?: unknown, opts?: { headers?: Record<string, string>; noCsrf?: boolean }) {
    return this.request<T>('POST', path, { ...opts, body });
  }
  patch<T = AnswerBody>(path: string, body?: unknown, opts?: { headers?: Record<string, string>; noCsrf?: boolean }) {
    return this.request<T>('PATCH', path, { ...opts, body });
  }
  delete<T = AnswerBody>(path: string, body?: unknown, opts?: { headers?: Record<string, string>; noCsrf?: boolean }) {
    return this.request<T>('DELETE', path, { ...opts, body });
  }
}
