/**
 * Where a `local` backup destination may be (CONTRACT "Backups"): a directory under one of BACKUP_LOCAL_ROOTS
 * (none set: no local destinations), never inside DATA_DIR, a root of STORAGE_ROOTS or any root an
 * environment's disk lives under (nor containing one), and one that only root can change: it and every
 * directory above it owned by root and not writable by group or others (a sticky directory such as /tmp
 * may be above it). Checked on the real path when the destination is saved, and again before every backup,
 * so that root never writes a snapshot where a tenant could plant a link.
 */
import { lstat, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Knex } from 'knex';
import type { Config } from '../system/config';
import { diskLocations } from '../db/queries/storage';

type Sources = { config: Pick<Config, 'backupLocalRoots' | 'dataDir' | 'storageRoots'>; knex: Knex };

export const LOCAL_NOT_ENABLED = 'local destinations are not enabled on this console (BACKUP_LOCAL_ROOTS is not set)';

const within = (p: string, root: string) => p === root || p.startsWith(root.endsWith('/') ? root : `${root}/`);

async function real(p: string): Promise<string> {
  return realpath(p).catch(() => path.resolve(p));
}

/** Whether local destinations may be added at all (BACKUP_LOCAL_ROOTS set). */
export const localDestinationsEnabled = (config: Pick<Config, 'backupLocalRoots'>) =>
  config.backupLocalRoots.length > 0;

/**
 * Why `p` may not be a local destination (a sentence for the `path` field or a destination's `last_error`),
 * or null with its real path when it may.
 */
export async function checkLocalDestination(
  deps: Sources,
  p: string,
): Promise<{ refusal: string; real?: undefined } | { refusal: null; real: string }> {
  const roots = deps.config.backupLocalRoots;
  if (roots.length === 0) return { refusal: LOCAL_NOT_ENABLED };
  if (!path.isAbsolute(p)) return { refusal: 'must be an absolute path' };
  let dir: string;
  try {
    dir = await realpath(p);
    if (!(await stat(dir)).isDirectory()) throw new Error('not a directory');
  } catch {
    return { refusal: 'must be an existing directory' };
  }
  const allowed = await Promise.all(roots.map(real));
  if (!allowed.some((root) => within(dir, root))) {
    return { refusal: `must be a directory under BACKUP_LOCAL_ROOTS (${roots.join(', ')})` };
  }
  const rows = await diskLocations(deps.knex);
  const locations = [...new Set(rows.flatMap((r) => [r.location, r.old_location ?? r.location]))];
  const forbidden = await Promise.all(
    [deps.config.dataDir, ...deps.config.storageRoots, ...locations].map((d) => real(d)),
  );
  if (forbidden.some((f) => within(dir, f) || within(f, dir))) {
    return {
      refusal:
        "must be outside the console's data directory, the storage roots (STORAGE_ROOTS) and every environment's files",
    };
  }
  const writable = await othersMayChange(dir);
  if (writable) {
    return {
      refusal: `must be a directory only root can change: ${writable} (it and every directory above it owned by root, not writable by group or others)`,
    };
  }
  return { refusal: null, real: dir };
}

/** The first directory of `dir` and those above it that someone but root could change, described; or null. */
async function othersMayChange(dir: string): Promise<string | null> {
  for (let d = dir, first = true; ; d = path.dirname(d), first = false) {
    const st = await lstat(d);
    const mode = st.mode & 0o7777;
    if (st.uid !== 0) return `${d} is owned by uid ${st.uid}`;
    const sticky = (mode & 0o1000) !== 0;
    // above the destination, a sticky directory keeps others from renaming root's entries in it
    if ((mode & 0o022) !== 0 && (first || !sticky)) return `${d} is writable by group or others`;
    if (d === path.dirname(d)) return null;
  }
}
