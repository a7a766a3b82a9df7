/**
 * The archive of the services server the console runs, as the worker and the API use it: backups (full,
 * differential, incremental; pgBackRest's own retention expires what is older than PITR_DAYS after each) and
 * what the archive holds (`pgbackrest info --output=json`, the backups' database lists, the newest WAL's time),
 * from which an environment's recovery window is read.
 */
import type { Config } from '../system/config';
import type { Secrets } from '../system/secrets';
import { pgbackrest, pitrEnv, pitrPassphrase, pitrServer, pitrUnavailableReason, type PitrServer } from './pitr';
import { servicesAdminUrl } from './pg-server';

export type PitrConfigPart = Pick<
  Config,
  'dataDir' | 'servicesPgdata' | 'servicesPort' | 'pitr' | 'servicesDatabaseUrl' | 'databaseUrl'
>;

export interface Archive {
  server: PitrServer;
  env: Record<string, string>;
}

/** The archive with the environment its commands need; null (with why) where the console runs no services server. */
export function openArchive(
  config: PitrConfigPart,
  secrets: Secrets,
): { archive: Archive; reason: null } | { archive: null; reason: string } {
  const server = pitrServer(config);
  if (!server) return { archive: null, reason: pitrUnavailableReason(config)! };
  const password = decodeURIComponent(new URL(servicesAdminUrl(config)).password);
  return { archive: { server, env: pitrEnv(server, pitrPassphrase(config.dataDir, secrets), password) }, reason: null };
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Takes a backup. Another backup holding the stanza's lock (a schedule's run beside a swap's) is waited for,
 * up to `lockWaitMs`.
 */
export async function takeArchiveBackup(
  archive: Archive,
  type: 'full' | 'diff' | 'incr',
  o: { signal?: AbortSignal; lockWaitMs?: number } = {},
): Promise<void> {
  const until = Date.now() + (o.lockWaitMs ?? 15 * 60_000);
  for (;;) {
    try {
      await pgbackrest(archive.server, archive.env, ['backup', `--type=${type}`], { signal: o.signal });
      return;
    } catch (err) {
      if (!/unable to acquire lock|\[050\]/.test((err as Error).message) || Date.now() > until) throw err;
      await pause(2000);
    }
  }
}

export interface ArchiveBackup {
  label: string;
  type: string;
  start: number;
  stop: number;
  /** The databases the backup holds, by name with their OID. */
  databases: Array<{ name: string; oid: number }>;
}

interface InfoJson {
  name: string;
  status: { code: number; message: string };
  archive: Array<{ id: string; min: string | null; max: string | null }>;
  backup: Array<{
    label: string;
    type: string;
    timestamp: { start: number; stop: number };
    'database-ref'?: Array<{ name: string; oid: number }> | null;
  }>;
}

async function info(archive: Archive, args: string[] = []): Promise<InfoJson | undefined> {
  const out = await pgbackrest(archive.server, archive.env, ['info', '--output=json', ...args]);
  return (JSON.parse(out) as InfoJson[])[0];
}

/** What the archive holds now, from one `info`: its backups, oldest first (without their database lists). */
interface ArchiveListing {
  backups: ArchiveBackup[];
  /** The current archive id and its newest WAL segment, if any. */
  current: { id: string; max: string | null } | undefined;
}

export async function archiveListing(archive: Archive): Promise<ArchiveListing> {
  const stanza = await info(archive);
  return {
    backups: (stanza?.backup ?? [])
      .map((b) => ({ label: b.label, type: b.type, start: b.timestamp.start, stop: b.timestamp.stop, databases: [] }))
      .sort((a, b) => a.stop - b.stop),
    current: stanza?.archive.at(-1),
  };
}

/**
 * A backup's manifest never changes once written, so the databases each label holds are read once per process
 * (`info --set`, a pgBackRest run that decrypts the manifest), keyed by the archive's config and the label: a
 * recovery window asked every second would otherwise run it again for every backup it walks.
 */
const detailsRead = new Map<string, ArchiveBackup['databases']>();
const DETAILS_KEPT = 500;

/** A backup with the databases its manifest names. */
export async function archiveBackupDetail(archive: Archive, b: ArchiveBackup): Promise<ArchiveBackup> {
  const key = `${archive.server.configFile}\0${b.label}`;
  let databases = detailsRead.get(key);
  if (!databases) {
    const detail = (await info(archive, [`--set=${b.label}`]))?.backup.find((x) => x.label === b.label);
    if (!detail) return { ...b, databases: [] };
    databases = (detail['database-ref'] ?? []).map((d) => ({ name: d.name, oid: Number(d.oid) }));
    if (detailsRead.size >= DETAILS_KEPT) detailsRead.delete(detailsRead.keys().next().value!);
    detailsRead.set(key, databases);
  }
  return { ...b, databases };
}

/** When the listing's newest WAL segment reached the repository (seconds), from the repository's own listing; null: none. */
export async function newestArchivedAt(archive: Archive, listing: ArchiveListing): Promise<number | null> {
  const current = listing.current;
  if (!current?.max) return null;
  const dir = `archive/${stanzaPath(current.id, current.max)}`;
  const out = await pgbackrest(archive.server, archive.env, ['repo-ls', '--output=json', dir]);
  const files = JSON.parse(out) as Record<string, { type: string; time?: number }>;
  let newest: number | null = null;
  for (const [name, f] of Object.entries(files))
    if (f.type === 'file' && name.startsWith(current.max) && f.time !== undefined)
      newest = Math.max(newest ?? 0, f.time);
  return newest;
}

const stanzaPath = (archiveId: string, segment: string) => `services/${archiveId}/${segment.slice(0, 16)}`;
