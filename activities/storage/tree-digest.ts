import { createHash } from 'node:crypto';
import type { Dir } from '../../host/no-follow';

interface TreeDigest {
  digest: string;
  files: number;
  bytes: number;
}

/**
 * A digest of a directory tree that two copies share only when every path, type, mode, owner, size, symlink
 * target and file content (SHA-256) is the same; what a move verifies before it switches. The tree is the
 * tenant's: it is walked from descriptors (no-follow.ts), so no link in it is followed and no FIFO waited on.
 */
export async function treeDigest(root: Dir): Promise<TreeDigest> {
  const all = createHash('sha256');
  let files = 0;
  let bytes = 0;
  const walk = async (dir: Dir, rel: string): Promise<void> => {
    for (const name of await dir.list()) {
      const relPath = rel ? `${rel}/${name}` : name;
      const st = await dir.lstat(name);
      if (!st) continue;
      let detail = '';
      if (st.isSymbolicLink()) detail = `-> ${await dir.readlink(name)}`;
      else if (st.isFile()) {
        detail = await fileHash(dir, name);
        files += 1;
        bytes += st.size;
      }
      all.update(
        `${JSON.stringify(relPath)} ${st.mode.toString(8)} ${st.uid}:${st.gid} ${st.isDirectory() ? '' : st.size} ${detail}\n`,
      );
      if (st.isDirectory()) {
        const sub = await dir.dir(name);
        try {
          await walk(sub, relPath);
        } finally {
          await sub.close();
        }
      }
    }
  };
  await walk(root, '');
  return { digest: all.digest('hex'), files, bytes };
}

async function fileHash(dir: Dir, name: string): Promise<string> {
  const h = createHash('sha256');
  const fh = await dir.file(name);
  try {
    for await (const chunk of fh.createReadStream({ autoClose: false })) h.update(chunk as Buffer);
  } finally {
    await fh.close();
  }
  return h.digest('hex');
}
