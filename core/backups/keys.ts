/**
 * Each environment's backup key: 32 random bytes generated the first time they are needed (sealed at rest,
 * bound to the environment), used by the worker to encrypt its snapshots; revealed to its owners on request.
 */
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Secrets } from '../../system/secrets';
import { open, seal } from '../../system/crypto';
import { keyFingerprint } from '../../host/snapshot-format';
import { aad } from '../../db/aad';
import { tombstoneBackupKey } from '../../db/queries/deleted-environments';
import { environmentBackupKey, environmentExists, storeBackupKeyIfNone } from '../../db/queries/environments';

/** The environment's key, generated and stored once (a concurrent first use keeps the first one written). */
export async function ensureBackupKey(knex: Knex, secrets: Secrets, envId: string): Promise<Buffer> {
  const sealed = await environmentBackupKey(knex, envId);
  if (sealed === undefined) throw new Error('the environment no longer exists');
  if (sealed) return Buffer.from(open(secrets, sealed, aad.backupKey(envId)), 'base64');
  const key = randomBytes(32);
  await storeBackupKeyIfNone(knex, envId, seal(secrets, key.toString('base64'), aad.backupKey(envId)));
  return ensureBackupKey(knex, secrets, envId);
}

/**
 * The key of the environment that took a snapshot: a live environment's (made if it has none yet), else the
 * one its tombstone kept (a deleted environment's snapshots may be restored into another of its project).
 */
export async function snapshotKey(knex: Knex, secrets: Secrets, envId: string): Promise<Buffer> {
  if (await environmentExists(knex, envId)) return ensureBackupKey(knex, secrets, envId);
  const kept = await tombstoneBackupKey(knex, envId);
  if (!kept) throw new Error('the environment that took the snapshot left no backup key');
  return Buffer.from(open(secrets, kept, aad.backupKey(envId)), 'base64');
}

export { keyFingerprint };
