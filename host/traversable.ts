/**
 * Whether other users (an environment's uid, HAProxy's and Varnish's users) can pass through the directories
 * above a path: each needs o+x. One walk from a path up to `/`, for the worker's sandboxes and volumes, the
 * settings check at start and the edge's data plane. A symbolic link is judged by the directory it leads to, as
 * the kernel does when it walks the path.
 */
import { type Stats, statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';

/** A directory that other users may not pass through, and its mode (0o750, say). */
interface ClosedDir {
  dir: string;
  mode: number;
}

/** The directories from `start`'s parent up to `/` (with `self`, from `start` itself). */
function* upwards(start: string, self: boolean): Generator<string> {
  for (let d = self ? path.resolve(start) : path.dirname(path.resolve(start)); ; d = path.dirname(d)) {
    yield d;
    if (d === path.dirname(d)) return;
  }
}

const closed = (d: string, st: Stats | null): ClosedDir | null =>
  st && (st.mode & 0o001) === 0 ? { dir: d, mode: st.mode & 0o777 } : null;

/** The first directory above `start` that others may not pass through, or null. One not made yet is skipped. */
export async function closedAbove(start: string, o: { self?: boolean } = {}): Promise<ClosedDir | null> {
  for (const d of upwards(start, o.self ?? false)) {
    const found = closed(d, await stat(d).catch(() => null));
    if (found) return found;
  }
  return null;
}

/** closedAbove, synchronously (the edge decides its data plane's users before it starts anything). */
export function closedAboveSync(start: string, o: { self?: boolean } = {}): ClosedDir | null {
  for (const d of upwards(start, o.self ?? false)) {
    let st: Stats | null = null;
    try {
      st = statSync(d);
    } catch {
      // not made yet: its parent decides
    }
    const found = closed(d, st);
    if (found) return found;
  }
  return null;
}

/** Throws, saying which directory and what to do, unless others can pass through every directory above `start`. */
export async function assertTraversable(start: string, consequence: string): Promise<void> {
  const found = await closedAbove(start);
  if (found)
    throw new Error(
      `${found.dir} does not let other users through (mode ${found.mode.toString(8)}): ${consequence}; chmod o+x it`,
    );
}
