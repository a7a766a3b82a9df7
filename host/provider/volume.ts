/**
 * The environment's volume on the local provider: a persistent directory (db/queries/storage.ts says
 * where) owned by the environment's uid, given to its web processes and deploy steps as VC_VOLUME_PATH and,
 * under bwrap, bound read-write at that same real path (sandbox.ts `launch`).
 */
import { chmod, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { childOutput } from '../child-output';
import { Dir, spawnIn, withDir } from '../no-follow';
import { assertTraversable } from '../traversable';

/**
 * The volume a launch binds: VC_VOLUME_PATH of its environment, which must be this environment's volume
 * (`<root>/volumes/<environment id>`); anything else is refused rather than bound.
 */
export function volumeOf(jail: { envId: string }, env: Record<string, string | undefined>): string | null {
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
 * `<root>/volumes` traverse-only for others so that the uid reaches it. Only the directory itself is given
 * to the uid, through its descriptor (no-follow.ts): what root puts inside (a restore, a copy from another
 * environment, a move) is handed over before it is renamed in, never here by path in a tree the tenant writes.
 */
export async function prepareVolume(jail: { uid: number | null; gid: number | null }, dir: string): Promise<void> {
  const parent = path.dirname(dir);
  const root = path.dirname(parent);
  await mkdir(parent, { recursive: true });
  await withDir(parent, [], async (volumes) => {
    const volume = await volumes.dir(path.basename(dir), { create: 0o700 });
    try {
      if (jail.uid === null || jail.gid === null) return;
      for (const d of [root, parent]) {
        const st = await stat(d);
        if ((st.mode & 0o001) === 0) await chmod(d, (st.mode & 0o777) | 0o011);
      }
      await assertTraversable(root, `volumes under ${root} cannot be reached by environments`);
      await volume.chown(jail.uid, jail.gid);
      await volume.chmod(0o700);
    } finally {
      await volume.close();
    }
  });
}

/**
 * A tar of the volume (the files part of a snapshot, activities/data/backup-engine.ts), made from its
 * descriptor (GNU tar follows no link in it); nothing when it does not exist.
 */
export async function* volumeTar(volume: string): AsyncGenerator<Buffer> {
  let dir: Dir;
  try {
    dir = await Dir.open(path.dirname(volume), path.basename(volume));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    const child = spawnIn([dir], 'tar', ['--numeric-owner', '-cf', '-', '.']);
    child.stdin.end();
    yield* childOutput(child, 'tar');
  } finally {
    await dir.close();
  }
}
