/**
 * Per-key state a process keeps for as long as it runs (one DATA_DIR's, one environment's, one port's). A settled
 * promise is never kept: a promise holds the async context it was made in for as long as it lives.
 */

/**
 * What a process makes once per key (a DATA_DIR's git home, an environment's sandbox) and keeps: the value, once
 * made, and not the promise that made it. A promise holds the async context it was made in for as long as it lives:
 * the first caller's Temporal activity, and through it that activity's whole worker. A process that serves one
 * DATA_DIR after another (a test worker running files one after another) kept every one of those workers, ~8 MB of
 * heap each, and every child process it forked after that paid for the larger heap.
 */
export class MadeOnce<T> {
  private readonly made = new Map<string, T>();
  private readonly making = new Map<string, Promise<T>>();

  /** The value for `key`: kept, being made (callers meanwhile share the one try), or made now by `make`. */
  get(key: string, make: () => Promise<T>): Promise<T> {
    if (this.made.has(key)) return Promise.resolve(this.made.get(key) as T);
    let pending = this.making.get(key);
    if (!pending) {
      pending = make().then((value) => {
        // forgotten meanwhile (forget): this try's value is not kept
        if (this.making.get(key) === pending) this.made.set(key, value);
        return value;
      });
      const settled = () => {
        if (this.making.get(key) === pending) this.making.delete(key);
      };
      // a failed try is not kept: the next call makes it again
      pending.then(settled, settled);
      this.making.set(key, pending);
    }
    return pending;
  }

  /** Forgets `key`: the next `get` makes it again. */
  forget(key: string): void {
    this.made.delete(key);
    this.making.delete(key);
  }
}

/**
 * One task at a time per key (a git mirror, an environment's network), in the order asked; a failed one does not
 * stop the next. The last one out forgets the key: its settled promise would keep its caller's context.
 */
export class OneAtATime {
  private readonly tails = new Map<string | number, Promise<unknown>>();

  run<T>(key: string | number, task: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const next = prev.then(task, task);
    const tail = next.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }
}
