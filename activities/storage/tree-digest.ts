import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import path from 'node:path';

export interface TreeDigest {
  digest: string;
  files: number;
  bytes: number;
}

/**
 * A digest of a directory tree that two copies share only when every path, type, mode, owner, size, symlink
 * target and file content (SHA-256) is the same; what a move verifies before it switches.
 */
export async function treeDigest(root: string): Promise<TreeDigest> {
  const all = createHash('sha256');
  let files = 0;
  let bytes = 0;
  const walk = async (rel: string): Promise<void> => {
    const entries = (await readdir(path.join(root, rel), { withFileTypes: true })).sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
    for (const e of entries) {
      const relPath = path.join(rel, e.name);
      const full = path.join(root, relPath);
      const st = await lstat(full);
      let detail = '';
      if (st.isSymbolicLink()) detail = `-> ${await readlink(full)}`;
      else if (st.isFile()) {
        detail = await fileHash(full);
        files += 1;
        bytes += st.size;
      }
      all.update(
        `${JSON.stringify(relPath)} ${st.mode.toString(8)} ${st.uid}:${st.gid} ${st.isDirectory() ? '' : st.size} ${detail}\n`,
      );
      if (st.isDirectory()) await walk(relPath);
    }
  };
  await walk('');
  return { digest: all.digest('hex'), files, bytes };
}

async function fileHash(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest('hex');
}
