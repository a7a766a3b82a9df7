/**
 * The one polling helper of the tests: waits until something holds, and fails naming what it waited for.
 *
 *   await until('the task to end', async () => (await getTask()).done && task);        // probe: a value when ready
 *   await until('two rows', () => knex('t').select(), (rows) => rows.length === 2);   // read, then check
 *
 * A probe is ready when it gives anything but `undefined`, `null` or `false`. With a check, the value read is
 * returned once the check holds; on timeout the error shows the last value read.
 */
interface UntilOptions {
  /** How long to wait in all (default 20 s). */
  timeoutMs?: number;
  /** Pause between tries (default 100 ms). */
  intervalMs?: number;
  /** Counts a probe that throws as not ready yet (default: the error fails the wait). */
  ignoreErrors?: boolean;
  /** Added to the timeout error (e.g. the tail of a process's output). */
  detail?: () => string;
}

type NotYet = undefined | null | false;

export function until<T>(
  what: string,
  probe: () => Promise<T | NotYet> | T | NotYet,
  opts?: UntilOptions | number,
): Promise<T>;
export function until<T>(
  what: string,
  read: () => PromiseLike<T> | T,
  check: (value: T) => boolean,
  opts?: UntilOptions | number,
): Promise<T>;
export async function until<T>(
  what: string,
  read: () => PromiseLike<T | NotYet> | T | NotYet,
  checkOrOpts?: ((value: T) => boolean) | UntilOptions | number,
  maybeOpts?: UntilOptions | number,
): Promise<T> {
  const check = typeof checkOrOpts === 'function' ? checkOrOpts : undefined;
  const given = typeof checkOrOpts === 'function' ? maybeOpts : checkOrOpts;
  const opts: UntilOptions = typeof given === 'number' ? { timeoutMs: given } : (given ?? {});
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    let value: T | NotYet;
    try {
      value = await read();
      last = value;
    } catch (err) {
      if (!opts.ignoreErrors) throw err;
      value = undefined;
      last = err;
    }
    if (check ? check(value as T) : value !== undefined && value !== null && value !== false) return value as T;
    if (Date.now() > deadline) {
      const shown = check ? `; last read: ${describe(last)}` : '';
      const detail = opts.detail ? `\n${opts.detail()}` : '';
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${shown}${detail}`);
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 100));
  }
}

function describe(value: unknown): string {
  if (value instanceof Error) return value.message;
  try {
    const text = JSON.stringify(value) ?? String(value);
    return text.length > 2000 ? `${text.slice(0, 2000)}…` : text;
  } catch {
    return String(value);
  }
}
