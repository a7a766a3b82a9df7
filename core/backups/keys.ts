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

/** The environment's key, generated and stored once (a concurrent first use keeps the first one written). */
export async function ensureBackupKey(knex: Knex, secrets: Secrets, envId: string): Promise<Buffer> {
  const row = await knex('environments').where({ id: envId }).first('backup_key_sealed');
  if (!row) throw new Error('the environment no longer exists');
  if (row.backup_key_sealed) return Buffer.from(open(secrets, row.backup_key_sealed, aad.backupKey(envId)), 'base64');
  const key = randomBytes(32);
  await knex('environments')
    .where({ id: envId })
    .whereNull('backup_key_sealed')
    .update({ backup_key_sealed: seal(secrets, key.toString('base64'), aad.backupKey(envId)) });
  return ensureBackupKey(knex, secrets, envId);
}

/**
 * The key of the environment that took a snapshot: a live environment's (made if it has none yet), else the
 * one its tombstone kept (a deleted environment's snapshots may be restored into another of its project).
 */
export async function snapshotKey(knex: Knex, secrets: Secrets, envId: string): Promise<Buffer> {
  if (await knex('environments').where({ id: envId }).first('id')) return ensureBackupKey(knex, secrets, envId);
  const kept = await tombstoneBackupKey(knex, envId);
  if (!kept) throw new Error('the environment that took the snapshot left no backup key');
  return Buffer.from(open(secrets, kept, aad.backupKey(envId)), 'base64');
}

export { keyFingerprint };
