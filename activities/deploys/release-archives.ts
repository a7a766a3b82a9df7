/**
 * The deploy activities' side of the release store (host/release-store.ts, docs/hosts.md): a release built on
 * one host is put in the store once; a host that starts a release it does not have fetches it (the provider's
 * ensureRelease); each environment keeps its live release and the RELEASE_KEEP newest there.
 */
import type { Deps } from '../../system/deps';
import { type Provider, ReleaseDigestMismatch } from '../../host/provider';
import { releaseKey, ReleaseStoreError } from '../../host/release-store';
import {
  forgetReleaseArchive,
  recordReleaseArchive,
  releaseArchiveDigest,
  releasesPastKeep,
  type ReleaseRow,
} from '../../db/queries/releases';
import type { TaskLog } from '../toolkit/task-log';
import { hostFault } from '../toolkit/failures';

/** provider.ensureRelease, its faults as host faults: a tampered archive is refused, a failing store retried. */
export async function ensureRelease(provider: Provider, release: ReleaseRow, port: number) {
  try {
    return await provider.ensureRelease({
      envId: release.environment_id,
      port,
      releaseId: release.id,
      sha: release.commit_sha,
      sha256: release.archive_sha256 ?? null,
    });
  } catch (err) {
    if (err instanceof ReleaseDigestMismatch) throw hostFault('ReleaseTampered', err.message);
    if (err instanceof ReleaseStoreError) throw hostFault('ReleaseStoreUnavailable', err.message);
    throw err;
  }
}

/** Puts the release built here in the release store, once (a retry finds its digest recorded), and records it. */
export async function storeRelease(deps: Deps, provider: Provider, release: ReleaseRow, log: TaskLog): Promise<void> {
  if (await releaseArchiveDigest(deps.knex, release.id)) return;
  try {
    const packed = await provider.storeRelease(release.environment_id, release.id);
    await recordReleaseArchive(deps.knex, release.id, packed);
    log.line(`==> Release ${release.id} put in the release store (${Math.ceil(packed.bytes / 1024)} KiB)`);
  } catch (err) {
    if (err instanceof ReleaseStoreError) throw hostFault('ReleaseStoreUnavailable', err.message);
    throw err;
  }
}

/**
 * After a release went live: the environment's archives past the live one and the RELEASE_KEEP newest leave the
 * store (a later rollback to one builds it again). A failure is logged, never the deploy's.
 */
export async function pruneReleaseArchives(deps: Deps, provider: Provider, environmentId: string): Promise<void> {
  try {
    for (const id of await releasesPastKeep(deps.knex, environmentId, deps.config.releaseStore.keep)) {
      await provider.releaseStore.delete(releaseKey(environmentId, id));
      await forgetReleaseArchive(deps.knex, id);
    }
  } catch (err) {
    deps.logger.warn({ environmentId, err: (err as Error).message }, 'release archives past RELEASE_KEEP stay');
  }
}
