/**
 * Data carried from one host to another through the release store (host/release-store.ts, reachable from every
 * host, so nothing relies on a shared disk): a moving environment's volume (machines/move-volume.ts) and the files
 * of a sync's source on another host (data/index.ts `copySyncFilesOut`, `syncData`). Each copy is a files-only snapshot encrypted under an
 * environment's backup key (host/snapshot-format.ts), written through a scratch file, under a key prefix of its
 * own (`<kind>/<environment id>/<task id>.vcb`), apart from the releases (`<env>/<release>.tar.gz`).
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Deps } from '../../system/deps';
import type { Provider } from '../../host/provider';
import { ensureBackupKey } from '../../core/backups/keys';
import { ReleaseStoreError } from '../../host/release-store';
import { decryptSnapshot, encryptSnapshot, type PartName } from '../../host/snapshot-format';
import { hostFault } from '../toolkit/failures';
import { dataParts } from './backup-engine';

/** What a copy carries: a moving environment's volume, or a sync's source files (keyed by the sync's target). */
type CopyKind = 'moves' | 'syncs';

/** An id as one segment of a store key (never a path of its own). */
function seg(s: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(s)) throw new Error(`not a store key segment: ${s}`);
  return s;
}

/** The store prefix of an environment's copies of one kind: `moves/<env>` or `syncs/<env>`. */
export const storeCopiesOf = (kind: CopyKind, envId: string) => `${kind}/${seg(envId)}`;

/** The store key of a task's copy: `moves/<env>/<task>.vcb` or `syncs/<env>/<task>.vcb`. */
export function storeCopyKey(kind: CopyKind, envId: string, taskId: string): string {
  return `${storeCopiesOf(kind, envId)}/${seg(taskId)}.vcb`;
}

export const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** A scratch directory for an encrypted copy, removed after `fn`. */
async function withScratch<T>(fn: (file: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(tmpdir(), 'vc-copy-'));
  try {
    return await fn(path.join(dir, 'copy.vcb'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A release store failure is the host's (retried); anything else is thrown as it is. */
const storeFault = (err: unknown): never => {
  if (err instanceof ReleaseStoreError) throw hostFault('ReleaseStoreUnavailable', err.message);
  throw err;
};

/**
 * Puts a copy of `volume` (this host's directory) in the store under `storeKey`: a files-only snapshot encrypted
 * under the backup key of the environment `keyOf`. Answers its size in bytes.
 */
export async function putVolumeCopy(
  deps: Deps,
  provider: Provider,
  o: { volume: string; keyOf: string; storeKey: string },
): Promise<number> {
  const key = await ensureBackupKey(deps.knex, deps.secrets, o.keyOf);
  return withScratch(async (file) => {
    await pipeline(
      Readable.from(encryptSnapshot(key, dataParts(deps.config, provider, { login: null, volume: o.volume }))),
      createWriteStream(file, { mode: 0o600 }),
    );
    await provider.releaseStore.put(o.storeKey, file).catch(storeFault);
    return (await stat(file)).size;
  });
}

/**
 * Fetches the copy under `storeKey` and gives `fn` its parts, decrypted with the backup key of `keyOf`, as they
 * are read. A copy that is not in the store throws `missing()`.
 */
export async function withVolumeCopy<T>(
  deps: Deps,
  provider: Provider,
  o: { keyOf: string; storeKey: string; missing: () => Error },
  fn: (parts: AsyncIterable<{ part: PartName; data: Buffer }>) => Promise<T>,
): Promise<T> {
  const key = await ensureBackupKey(deps.knex, deps.secrets, o.keyOf);
  return withScratch(async (file) => {
    const found = await provider.releaseStore.get(o.storeKey, file).catch(storeFault);
    if (!found) throw o.missing();
    return fn(decryptSnapshot(key, createReadStream(file)));
  });
}

/**
 * Deletes the environment's copies of `kind` (nothing when there are none): the ending task's own, and any an
 * earlier task left when the store failed at its drop. Moves and syncs are exclusive (one change at a time per
 * environment), so no other task's copy is there to lose.
 */
export async function dropStoreCopies(provider: Provider, kind: CopyKind, envId: string): Promise<void> {
  await provider.releaseStore.deleteUnder(storeCopiesOf(kind, envId)).catch(storeFault);
}
