export const FINISHED = new Set(['succeeded', 'failed', 'cancelled']);

export interface LogFollowerOptions {
  /** Where the API is: `/api/vc/v1` in the browser, a full address elsewhere. */
  base: string;
  taskId: string;
  /** Called with each new piece of the log, in order. */
  onText(text: string): void;
  /** Called with the task's status at each read. */
  onStatus?(status: string): void;
  /** Pause between reads while the task runs (the spec: every second or two). */
  intervalMs?: number;
  /** Headers for each read (a bearer outside the browser). */
  headers?: Record<string, string>;
  fetch?: typeof fetch;
}

/**
 * Follows a task's log as it is written: GET /tasks/{id}/log from the last offset (`after` = the X-Log-Seq of
 * the previous read), every 1.5 s, until X-Task-Status says the task has ended (then one last read).
 */
export class LogFollower {
  private seq: number | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  private readonly fetch: typeof fetch;
  /** Resolves with the final status once the task has ended and its log is read to the end. */
  readonly done: Promise<string>;
  private resolve!: (status: string) => void;

  constructor(private readonly opts: LogFollowerOptions) {
    this.fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.done = new Promise((r) => (this.resolve = r));
  }

  /** The offset the next read starts from (undefined before the first). */
  get offset(): number | undefined {
    return this.seq;
  }

  start(): this {
    void this.read();
    return this;
  }

  stop() {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private async read(): Promise<void> {
    if (this.stopped) return;
    const query = this.seq === undefined ? '' : `?after=${this.seq}`;
    let status: string | undefined;
    try {
      const res = await this.fetch(`${this.opts.base}/tasks/${this.opts.taskId}/log${query}`, {
        credentials: 'same-origin',
        cache: 'no-store',
        headers: this.opts.headers,
      });
      if (res.ok) {
        const text = await res.text();
        const seq = Number(res.headers.get('x-log-seq'));
        if (Number.isFinite(seq)) this.seq = seq;
        status = res.headers.get('x-task-status') ?? undefined;
        if (text && !this.stopped) this.opts.onText(text);
        if (status) this.opts.onStatus?.(status);
      }
    } catch {
      // a failed read is tried again at the next tick
    }
    if (this.stopped) return;
    // The status is read before the log: an ended task's log is complete once read after its end.
    if (status && FINISHED.has(status)) {
      this.stopped = true;
      this.resolve(status);
      return;
    }
    this.timer = setTimeout(() => void this.read(), this.opts.intervalMs ?? 1500);
  }
}
