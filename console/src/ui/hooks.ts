import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, quiet } from '../api/client';

export interface Loaded<T> {
  data?: T;
  error?: unknown;
  loading: boolean;
  reload(): Promise<void>;
}

/**
 * Loads data when the keys change; `reload` loads again. Answers to an older key are dropped. `later`: the
 * first load waits until the page's other calls have answered (`quiet`), for what is shown beside the main data.
 */
export function useLoad<T>(load: () => Promise<T>, keys: unknown[], o: { later?: boolean } = {}): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const generation = useRef(0);
  const reload = useCallback(async () => {
    const mine = ++generation.current;
    setState((s) => ({ ...s, loading: true }));
    try {
      const data = await load();
      if (mine === generation.current) setState({ data, loading: false });
    } catch (error) {
      if (mine === generation.current) setState({ error, loading: false });
    }
  }, keys);
  useEffect(() => {
    void (o.later ? quiet().then(reload) : reload());
  }, [reload]);
  return { ...state, reload };
}

export interface Action<A extends unknown[]> {
  run(...args: A): Promise<void>;
  busy: boolean;
  error: unknown;
  clear(): void;
}

/** A button's or form's call: busy while it runs, its refusal kept for showing. */
export function useAction<A extends unknown[]>(fn: (...args: A) => Promise<unknown>): Action<A> {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const run = async (...args: A) => {
    setBusy(true);
    setError(undefined);
    try {
      await fn(...args);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return { run, busy, error, clear: () => setError(undefined) };
}

/** The reason a field was refused, from an ApiError's `fields`. */
export function fieldError(error: unknown, name: string): string | undefined {
  return error instanceof ApiError ? error.fields[name] : undefined;
}
