/**
 * What a snapshot holds and how it is taken and put back, streamed end to end:
 * - take: `pg_dump -Fc` of the service's database and a tar of the environment's volume, as the parts of
 *   snapshot-format.ts, encrypted, hashed (SHA-256 of the stored bytes) and streamed to the object store;
 * - put back: the decrypted parts streamed into `pg_restore` (into a fresh database swapped in only when
 *   the restore completed, pg-restore.ts) and `tar -x` (into a fresh directory swapped in the same way),
 *   put-back.ts;
 * - sync: the same parts of one environment streamed straight into the other's put back.
 * The child processes they stream through (pg_dump's login, the sinks) are child-streams.ts.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Config } from '../../system/config';
import type { ServiceLogin } from '../../host/pg-server';
import { decryptSnapshot, encryptSnapshot, type PartName } from '../../host/snapshot-format';
import type { ObjectStore, StoredObject } from '../../host/destinations';
import { childOutput as output } from '../../host/child-output';
import type { Provider } from '../../host/provider';
import type { SnapshotCounts } from '../../db/models/backup';
import { countTarEntries, dumpInExportedSnapshot } from './snapshot-counts';
import { checkClientVersion, pgLogin } from './child-streams';
import { putBack, type DataSource } from './put-back';

type PgConfig = Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>;

/** What reads an environment's volume on this host: the provider (its `volumeTar`). */
type VolumeReader = Pick<Provider, 'volumeTar'>;

type DataPart = { part: PartName; source: () => AsyncIterable<Buffer> };

/** The `database` part of a login's data (pg_dump -Fc), read lazily; with `record`, as dataParts says. */
function databasePart(config: PgConfig, login: ServiceLogin, record?: SnapshotCounts): DataPart {
  const { args, env } = pgLogin(config, login);
  const dump = (extra: string[]) =>
    output(spawn('pg_dump', ['-Fc', '--no-owner', '--no-acl', ...extra, ...args], { env }), 'pg_dump');
  return {
    part: 'database',
    source: () =>
      record
        ? dumpInExportedSnapshot(
            config,
            login,
            (id) => dump([`--snapshot=${id}`]),
            (t) => (record.tables = t),
          )
        : dump([]),
  };
}

/**
 * The parts of an environment's data, each read lazily when the consumer gets to it: its database, and its
 * volume as `volumes` (the provider of the host it is on) reads it. With `record` (a backup), the dump runs in an
 * exported snapshot whose row counts go to `record.tables`, and the tar's entry count to `record.files`
 * (snapshot-counts.ts), for the restore drills to compare with.
 */
export function dataParts(
  config: PgConfig,
  volumes: VolumeReader,
  src: DataSource,
  record?: SnapshotCounts,
): DataPart[] {
  const parts: DataPart[] = [];
  if (src.login) parts.push(databasePart(config, src.login, record));
  const tar = () => volumes.volumeTar(src.volume);
  parts.push({ part: 'files', source: record ? () => countTarEntries(tar(), (n) => (record.files = n)) : tar });
  return parts;
}

async function* flatten(parts: DataPart[]): AsyncGenerator<{ part: PartName; data: Buffer }> {
  for (const { part, source } of parts) for await (const data of source()) yield { part, data };
}

/**
 * Takes a snapshot to `store` under `objectKey`. Resolves with the stored size and SHA-256; a failure
 * anywhere (a part's command, the store) rejects, and the store keeps no partial object.
 */
export async function takeSnapshot(opts: {
  config: PgConfig;
  /** Reads the source's volume: the provider of this host. */
  volumes: VolumeReader;
  source: DataSource;
  key: Buffer;
  store: ObjectStore;
  objectKey: string;
  signal?: AbortSignal;
}): Promise<{ sizeBytes: number; sha256: string; contents: PartName[]; counts: SnapshotCounts }> {
  if (opts.source.login) await checkClientVersion(opts.config, 'pg_dump');
  const hash = createHash('sha256');
  const counts: SnapshotCounts = { tables: null, files: null };
  const parts = dataParts(opts.config, opts.volumes, opts.source, counts);
  async function* hashed() {
    for await (const chunk of encryptSnapshot(opts.key, parts)) {
      hash.update(chunk);
      yield chunk;
    }
  }
  const sizeBytes = await opts.store.put(opts.objectKey, Readable.from(hashed()), opts.signal);
  return { sizeBytes, sha256: hash.digest('hex'), contents: parts.map((p) => p.part), counts };
}

/** Decrypts a stored snapshot into the environment (restore). */
export async function restoreSnapshot(opts: {
  config: PgConfig;
  target: DataSource;
  key: Buffer;
  store: ObjectStore;
  objectKey: string;
  /** What the snapshot row says was stored: the object is read only once it was found to be that. */
  expected: StoredObject;
  marker?: string;
  onLine?: (line: string) => void;
}): Promise<PartName[]> {
  const body = await opts.store.get(opts.objectKey, opts.expected);
  try {
    return await putBack({
      config: opts.config,
      target: opts.target,
      parts: decryptSnapshot(opts.key, body),
      marker: opts.marker,
      onLine: opts.onLine,
    });
  } finally {
    body.destroy();
  }
}

/** The parts of `first`, then those of `then`. */
async function* concat<T>(first: AsyncIterable<T>, then: AsyncIterable<T>): AsyncGenerator<T> {
  yield* first;
  yield* then;
}

/** Copies one environment's data into another (sync), no snapshot in between. */
export async function copyData(opts: {
  config: PgConfig;
  /** Reads the source's volume: the provider of this host. */
  volumes: VolumeReader;
  source: DataSource;
  /**
   * The source's files when its volume is on another host (its copy through the release store, store-copies.ts):
   * put back instead of reading `source.volume` here.
   */
  files?: AsyncIterable<{ part: PartName; data: Buffer }>;
  target: DataSource;
  marker?: string;
  onLine?: (line: string) => void;
}) {
  if (opts.source.login) await checkClientVersion(opts.config, 'pg_dump');
  const parts = dataParts(opts.config, opts.volumes, opts.source);
  return putBack({
    config: opts.config,
    target: opts.target,
    parts: opts.files ? concat(flatten(parts.filter((p) => p.part !== 'files')), opts.files) : flatten(parts),
    marker: opts.marker,
    onLine: opts.onLine,
  });
}

/**
 * Copies one service database into another login's database (reshape): the `database` part alone, dumped
 * with `pg_dump -Fc` and put back as a restore is (into `<target>_restore`, swapped in once complete).
 */
export async function copyDatabase(opts: {
  config: PgConfig;
  from: ServiceLogin;
  to: ServiceLogin;
  onLine?: (line: string) => void;
}): Promise<void> {
  await checkClientVersion(opts.config, 'pg_dump');
  await putBack({
    config: opts.config,
    target: { login: opts.to, volume: '' },
    parts: flatten([databasePart(opts.config, opts.from)]),
    onLine: opts.onLine,
  });
}
