/**
 * An environment's recovery window (CONTRACT "Point-in-time recovery"), read from the archive itself:
 * earliest is the stop time of the first pgBackRest backup holding the environment's current database (its
 * name with its current OID: a swap gives the name a new database, which an incremental backup then holds),
 * latest the time the newest WAL segment reached the repository.
 */
import type { Knex } from 'knex';
import type { Secrets } from '../system/secrets';
import { errors } from './errors';
import { withAdmin } from '../host/pg-server';
import { postgresqlDatabaseName } from '../db/queries/services';
import {
  archiveBackupDetail,
  archiveListing,
  newestArchivedAt,
  openArchive,
  type Archive,
  type ArchiveBackup,
  type PitrConfigPart,
} from '../host/pitr-archive';

interface RecoveryWindow {
  earliest: Date;
  latest: Date;
  /** The archive, and every backup holding the current database, oldest first. */
  archive: Archive;
  backups: ArchiveBackup[];
  database: { name: string; oid: number };
}

type WindowDeps = { knex: Knex; config: PitrConfigPart; secrets: Secrets };

export const isoSeconds = (d: Date) => `${d.toISOString().slice(0, 19)}Z`;

/** The environment's postgresql service's database, or 409 no_database_service. */
async function serviceDatabase(knex: Knex, envId: string): Promise<string> {
  const name = await postgresqlDatabaseName(knex, envId);
  if (name === undefined) throw errors.conflict('no_database_service');
  return name;
}

const unavailable = (reason: string) =>
  errors.conflict('pitr_unavailable', `Point-in-time recovery is not available: ${reason}`, { reason });

export async function recoveryWindow(deps: WindowDeps, envId: string): Promise<RecoveryWindow> {
  const name = await serviceDatabase(deps.knex, envId);
  const { archive, reason } = openArchive(deps.config, deps.secrets);
  if (!archive) throw unavailable(reason);
  const oid = await withAdmin(deps.config, async (c) => {
    const r = await c.query('SELECT oid FROM pg_catalog.pg_database WHERE datname = $1', [name]);
    return r.rows[0] ? Number(r.rows[0].oid) : null;
  });
  if (oid === null) throw errors.conflict('no_database_service');
  // The backups holding the current database are the newest ones (its OID is its own until a swap): walked
  // from the newest back to the first that does not.
  const listing = await archiveListing(archive);
  const holding: ArchiveBackup[] = [];
  for (const b of [...listing.backups].reverse()) {
    const detail = await archiveBackupDetail(archive, b);
    if (!detail.databases.some((d) => d.name === name && d.oid === oid)) break;
    holding.unshift(detail);
  }
  if (holding.length === 0) throw unavailable('no backup of this database yet');
  const newest = await newestArchivedAt(archive, listing);
  const earliest = new Date(holding[0].stop * 1000);
  const latest = new Date(Math.max(newest ?? 0, holding.at(-1)!.stop) * 1000);
  return { earliest, latest, archive, backups: holding, database: { name, oid } };
}
