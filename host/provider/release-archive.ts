/**
 * A built release in the release store (host/release-store.ts): packed once by the host that built it, fetched
 * and unpacked by any host that starts it without having it.
 *
 * - Packing: `tar -cz` of the release tree from its descriptor (no-follow.ts: no link followed), into a file of
 *   the worker's, hashed (sha256) on the way, then put in the store. The digest is recorded with the release.
 * - Fetching: the object is copied into a file of the worker's and its sha256 checked against the recorded one
 *   before anything is unpacked (a mismatch is ReleaseDigestMismatch: nothing is unpacked). It is unpacked as the
 *   environment's uid (it can write nowhere else) into `releases/.fetch-<id>-<random>/`, its completion marker
 *   checked and written again by the worker, and renamed into place: a release directory is complete or absent,
 *   as a build leaves it. The sandbox sees it at the same path as where it was built (sandbox.ts RELEASE_MOUNT).
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { chmod, chown, mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { type ReleaseStore, releaseKey } from '../release-store';
import { closed } from '../child-output';
import { removeTree, spawnIn, withDir } from '../no-follow';
import { type ReleaseMarker, readReleaseMarker, releaseDirFor, releasesDir, writeReleaseMarker } from './releases';
import type { Jail } from './sandbox';

/** The object in the store is not the one recorded with the release: refused, nothing unpacked. */
export class ReleaseDigestMismatch extends Error {
  constructor(releaseId: string) {
    super(
      `release ${releaseId} in the release store does not match the digest recorded when it was built; it was refused`,
    );
    this.name = 'ReleaseDigestMismatch';
  }
}

export interface PackedRelease {
  sha256: string;
  bytes: number;
}

/** Where the worker keeps archives in transit (its own, 0700). */
async function transfers(dataDir: string): Promise<string> {
  const dir = path.join(dataDir, 'release-transfers');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  return dir;
}

function tmpName(dir: string, what: string): string {
  return path.join(dir, `${what}-${randomBytes(6).toString('hex')}.tar.gz`);
}

/** Packs the release built on this host and puts it in the store: its digest and size. */
export async function packRelease(o: {
  dataDir: string;
  store: ReleaseStore;
  envId: string;
  releaseId: string;
}): Promise<PackedRelease> {
  const releaseDir = releaseDirFor(o.dataDir, o.envId, o.releaseId);
  const file = tmpName(await transfers(o.dataDir), o.releaseId);
  try {
    const hash = createHash('sha256');
    await withDir(path.dirname(releaseDir), [path.basename(releaseDir)], async (tree) => {
      const tar = spawnIn([tree], 'tar', ['--numeric-owner', '-czf', '-', '.']);
      tar.stdin.end();
      let stderr = '';
      tar.stderr.on('data', (c) => (stderr = (stderr + c).slice(-2000)));
      const ended = closed(tar, 'tar -c');
      await pipeline(tar.stdout, hashing(hash), createWriteStream(file, { mode: 0o600 }));
      const [code, signal] = await ended;
      if (code !== 0)
        throw new Error(`tar -c of release ${o.releaseId} failed (${signal ?? `exit ${code}`}): ${stderr}`);
    });
    const { size } = await stat(file);
    await o.store.put(releaseKey(o.envId, o.releaseId), file);
    return { sha256: hash.digest('hex'), bytes: size };
  } finally {
    await rm(file, { force: true });
  }
}

/**
 * The release on this host, fetched from the store and unpacked when it is not here yet (see the file comment):
 * its marker, or null when the store has no such object. Throws ReleaseDigestMismatch for an object that is not
 * the recorded one.
 */
export async function fetchRelease(o: {
  dataDir: string;
  store: ReleaseStore;
  envId: string;
  releaseId: string;
  sha: string;
  sha256: string;
  jail: Jail;
}): Promise<ReleaseMarker | null> {
  const finalDir = releaseDirFor(o.dataDir, o.envId, o.releaseId);
  const file = tmpName(await transfers(o.dataDir), o.releaseId);
  const parent = releasesDir(o.dataDir, o.envId);
  const tmpDir = path.join(parent, `.fetch-${o.releaseId}-${randomBytes(4).toString('hex')}`);
  try {
    if (!(await o.store.get(releaseKey(o.envId, o.releaseId), file))) return null;
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
    if (hash.digest('hex') !== o.sha256) throw new ReleaseDigestMismatch(o.releaseId);

    await mkdir(parent, { recursive: true });
    // root's, as a build leaves it: the tenant works inside its release trees only
    if (o.jail.uid !== null) await chmod(parent, 0o711);
    for (const name of await readdir(parent))
      if (name.startsWith(`.fetch-${o.releaseId}-`)) await removeTree(parent, name);
    await mkdir(tmpDir, { mode: 0o700 });
    if (o.jail.uid !== null && o.jail.gid !== null) await chown(tmpDir, o.jail.uid, o.jail.gid);
    await untar(file, tmpDir, o.jail);
    const marker = await readReleaseMarker(tmpDir);
    if (!marker || marker.releaseId !== o.releaseId || marker.sha !== o.sha || marker.envId !== o.envId)
      throw new Error(`the archive of release ${o.releaseId} holds no release of its commit`);
    // the worker's own marker again (the archive's was unpacked by the tenant's uid)
    await writeReleaseMarker(tmpDir, marker);
    try {
      await rename(tmpDir, finalDir);
    } catch (err) {
      // another attempt put it in place meanwhile: theirs stands when it is this release
      const other = await readReleaseMarker(finalDir);
      if (other?.releaseId === o.releaseId && other.sha === o.sha) return other;
      throw err;
    }
    return marker;
  } finally {
    await rm(file, { force: true });
    await removeTree(parent, path.basename(tmpDir)).catch(() => undefined);
  }
}

/** `tar -xz` of the archive into `dir`, as the environment's uid (none: as the worker), fed on its stdin. */
async function untar(file: string, dir: string, jail: Jail): Promise<void> {
  const tar = spawn('tar', ['-xzf', '-', '--no-same-owner'], {
    cwd: dir,
    env: { PATH: process.env.PATH, LC_ALL: 'C' },
    stdio: ['pipe', 'ignore', 'pipe'],
    ...(jail.uid !== null && jail.gid !== null ? { uid: jail.uid, gid: jail.gid } : {}),
  });
  let stderr = '';
  tar.stderr.on('data', (c) => (stderr = (stderr + c).slice(-2000)));
  tar.stdin.on('error', () => undefined); // EPIPE: told by the exit code
  const ended = closed(tar, 'tar -x');
  await pipeline(createReadStream(file), tar.stdin).catch(() => undefined);
  const [code, signal] = await ended;
  if (code !== 0) throw new Error(`tar -x of a release failed (${signal ?? `exit ${code}`}): ${stderr.trim()}`);
}

function hashing(hash: ReturnType<typeof createHash>): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      cb(null, chunk);
    },
  });
}
