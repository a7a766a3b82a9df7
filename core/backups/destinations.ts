/**
 * The non-HTTP half of backup destinations, shared by the API (api/backups/destinations-service.ts) and the worker:
 * a row's store spec (secrets opened), why a destination takes no backup now, and its last error.
 */
import type { Deps } from '../../system/deps';
import { open } from '../../system/crypto';
import type { BackupDestination } from '../../db/models/backup-destination';
import { type DestinationSpec, openStore } from '../../host/destinations';
import { checkLocalDestination } from '../../host/local-destination';
import { aad } from '../../db/aad';

/** The store spec of a destination row, secrets opened (worker and API only; never shown). */
export function destinationSpec(deps: Pick<Deps, 'secrets'>, row: BackupDestination): DestinationSpec {
  if (row.kind === 'local') return { kind: 'local', settings: { path: row.settings.path } };
  const secrets = JSON.parse(open(deps.secrets, row.secrets_sealed ?? '', aad.backupDestination(row.id)));
  return { kind: 's3', settings: row.settings as never, secrets };
}

/**
 * Why the destination takes no backup now (a local one outside BACKUP_LOCAL_ROOTS, or no longer a directory
 * only root can change), or null. Its snapshots can still be downloaded and restored: every read checks the
 * object against its row.
 */
export async function destinationRefusal(deps: Pick<Deps, 'config' | 'knex'>, row: BackupDestination) {
  if (row.kind !== 'local') return null;
  const { refusal } = await checkLocalDestination(deps, row.settings.path);
  return refusal && `backups to this local destination are refused: its path ${refusal}`;
}

/** Keeps why a backup to the destination was refused or failed (null: the last one worked). */
export async function recordDestinationError(knex: Deps['knex'], id: string, error: string | null) {
  await knex('backup_destinations')
    .where({ id })
    .update({ last_error: error, last_error_at: error ? knex.fn.now() : null });
}

/** Deletes an object (a snapshot's file or S3 object) from a destination. */
export async function deleteFromDestination(
  deps: Deps,
  destination: BackupDestination,
  objectKey: string,
): Promise<void> {
  const store = openStore(destinationSpec(deps, destination), deps.config);
  try {
    await store.delete(objectKey);
  } finally {
    store.close();
  }
}
