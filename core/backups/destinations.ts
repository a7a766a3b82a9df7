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
import { environmentHost } from '../../db/queries/hosts';
import { errors } from '../errors';

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
  const overlap = refusal ? null : await otherTeamsOverlap(deps.knex, row.team_id, row.settings.path, row);
  return (refusal ?? overlap) && `backups to this local destination are refused: its path ${refusal ?? overlap}`;
}

/**
 * A `local` destination is a directory on the control plane's machine (the API's HOST_NAME): snapshots stream
 * through it. An environment placed on another host backs up to and restores from it never: 409
 * `local_destination_elsewhere` naming the destination (`what` says what was asked, for the message). An
 * environment with no host recorded runs on the control plane's machine.
 */
export async function assertDestinationReachable(
  deps: Pick<Deps, 'config' | 'knex'>,
  environmentId: string,
  row: Pick<BackupDestination, 'id' | 'name' | 'kind'>,
  what: string,
) {
  if (row.kind !== 'local') return;
  const host = await environmentHost(deps.knex, environmentId);
  if (!host || host.name === deps.config.hostName) return;
  throw errors.conflict(
    'local_destination_elsewhere',
    `${what}: the local backup destination "${row.name}" (${row.id}) is on the control plane's machine, and this ` +
      'environment runs on another machine. Use an s3 destination.',
  );
}

const OTHER_TEAMS_PATH =
  "must not lie inside, contain or equal a directory that another team's local backup destination uses";

const within = (p: string, root: string) => p === root || p.startsWith(root.endsWith('/') ? root : `${root}/`);

/**
 * Local destinations, team by team (CONTRACT "Backups"): a team's directory must not lie inside, contain or
 * equal another team's. `realPath` is the real path (as stored). Without `existing`, a new claim (a destination
 * added, or its path changed) is checked against every other team's destination; an existing destination only
 * against those created before it, so that the one that came second is the one refused. A team's own
 * destinations may overlap: their objects are all the team's, under keys that never collide
 * (`<environment id>/<snapshot id>.vcb`). Answers the refusal (for `path`), or null.
 */
export async function otherTeamsOverlap(
  knex: Deps['knex'],
  teamId: string,
  realPath: string,
  existing?: Pick<BackupDestination, 'id' | 'created_at'>,
): Promise<string | null> {
  let q = knex('backup_destinations').where({ kind: 'local' }).whereNot({ team_id: teamId });
  if (existing)
    q = q.where((w) =>
      w
        .where('created_at', '<', existing.created_at)
        .orWhere((x) => x.where('created_at', existing.created_at).where('id', '<', existing.id)),
    );
  const others: Array<{ settings: { path?: string } }> = await q.select('settings');
  const overlaps = others.some(
    ({ settings }) => settings.path && (within(realPath, settings.path) || within(settings.path, realPath)),
  );
  return overlaps ? OTHER_TEAMS_PATH : null;
}

/** Serializes the claims of local directories (in the transaction that saves one), so two teams never race. */
export async function lockLocalClaims(trx: Deps['knex']): Promise<void> {
  await trx.raw("SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('vc:backup-destinations:local'))");
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
