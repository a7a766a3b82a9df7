/**
 * GET with the ETag of the last answer (If-None-Match): a 304 keeps what was read before. One per URL.
 */
export class EtagReader<T> {
  private etag: string | undefined;
  private last: T | undefined;
  private readonly fetch: typeof fetch;

  constructor(
    private readonly url: string,
    /** Headers for each read (a session cookie outside the browser), and the fetch to read with. */
    private readonly opts: { headers?: Record<string, string>; fetch?: typeof fetch } = {},
  ) {
    this.fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
  }

  async read(): Promise<{ data: T; changed: boolean }> {
    const headers: Record<string, string> = { accept: 'application/json', ...this.opts.headers };
    if (this.etag && this.last !== undefined) headers['if-none-match'] = this.etag;
    const res = await this.fetch(this.url, { credentials: 'same-origin', headers, cache: 'no-store' });
    if (res.status === 304 && this.last !== undefined) return { data: this.last, changed: false };
    if (!res.ok) throw new Error(`${this.url} answered ${res.status}`);
    this.etag = res.headers.get('etag') ?? undefined;
    this.last = (await res.json()) as T;
    return { data: this.last, changed: true };
  }
}
