/**
 * The environment's volume on the local provider: a persistent directory (db/queries/storage.ts says
 * where) owned by the environment's uid, given to its web processes and deploy steps as VC_VOLUME_PATH and,
 * under bwrap, bound read-write at that same real path (sandbox.ts `launch`).
 */
import { execFile } from 'node:child_process';
import { chmod, chown, lstat, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Jail } from './sandbox';

const run = promisify(execFile);

/**
 * The volume a launch binds: VC_VOLUME_PATH of its environment, which must be this environment's volume
 * (`<root>/volumes/<environment id>`); anything else is refused rather than bound.
 */
export function volumeOf(jail: Pick<Jail, 'envId'>, env: Record<string, string | undefined>): string | null {
  const value = env.VC_VOLUME_PATH;
  if (!value) return null;
  const dir = path.resolve(value);
  if (path.basename(dir) !== jail.envId || path.basename(path.dirname(dir)) !== 'volumes') {
    throw new Error(`VC_VOLUME_PATH ${value} is not the volume of environment ${jail.envId}`);
  }
  return dir;
}

/**
 * Makes the volume directory exist, owned by the environment's uid (0700), with `<root>` and
 * `<root>/volumes` traverse-only for others so that the uid reaches it. Contents put there by root (a
 * restore, a copy from another environment) are handed to the uid once.
 */
export async function prepareVolume(jail: Pick<Jail, 'uid' | 'gid'>, dir: string): Promise<void> {
  const parent = path.dirname(dir);
  const root = path.dirname(parent);
  await mkdir(dir, { recursive: true });
  if (jail.uid === null || jail.gid === null) return;
  for (const d of [root, parent]) {
    const st = await stat(d);
    if ((st.mode & 0o001) === 0) await chmod(d, (st.mode & 0o777) | 0o011);
  }
  await checkTraversable(root);
  const st = await lstat(dir);
  if (st.uid !== jail.uid || st.gid !== jail.gid) {
    await run('chown', ['-R', '-P', `${jail.uid}:${jail.gid}`, '--', dir]);
  } else {
    await chown(dir, jail.uid, jail.gid);
  }
  await chmod(dir, 0o700);
}

/** Every directory above `dir` must let others through, or the environment's uid cannot reach its volume. */
async function checkTraversable(dir: string): Promise<void> {
  for (let d = path.dirname(dir); ; d = path.dirname(d)) {
    const st = await lstat(d);
    if ((st.mode & 0o001) === 0) {
      throw new Error(
        `${d} does not let other users through (mode ${(st.mode & 0o777).toString(8)}): volumes under ${dir} cannot be reached by environments; chmod o+x it`,
      );
    }
    if (d === path.dirname(d)) return;
  }
}
