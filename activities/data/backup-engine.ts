/**
 * What a snapshot holds and how it is taken and put back, streamed end to end:
 * - take: `pg_dump -Fc` of the service's database and a tar of the environment's volume, as the parts of
 *   snapshot-format.ts, encrypted, hashed (SHA-256 of the stored bytes) and streamed to the object store;
 * - put back: the decrypted parts streamed into `pg_restore` (into a fresh database swapped in only when
 *   the restore completed, pg-restore.ts) and `tar -x` (into a fresh directory swapped in the same way);
 * - sync: the same parts of one environment streamed straight into the other's put back.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { Config } from '../../system/config';
import { SAFE_SESSION_OPTIONS, serverMajorVersion, servicesAdminUrl, type ServiceLogin } from '../../host/pg-server';
import { createRestoreTarget, settleRestoreTarget, swapInRestored, swapInRestoredKeeping } from '../../host/pg-restore';
import { decryptSnapshot, encryptSnapshot, type PartName } from '../../host/snapshot-format';
import type { ObjectStore, StoredObject } from '../../host/destinations';
import { Dir, spawnIn } from '../../host/no-follow';
import { childOutput as output } from '../../host/child-output';
import type { Provider } from '../../host/provider';
import type { SnapshotCounts } from '../../db/models/backup';
import { countTarEntries, dumpInExportedSnapshot } from './snapshot-counts';

type PgConfig = Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>;

/** Arguments and environment that make pg_dump/pg_restore log in as the service role (the password never in argv). */
export function pgLogin(config: PgConfig, login: ServiceLogin) {
  const admin = new URL(servicesAdminUrl(config));
  return {
    args: ['-h', admin.hostname, '-p', admin.port || '5432', '-U', login.role, '-d', login.database],
    // an empty search_path, as every session of the worker (pg-server.ts); pg_dump and pg_restore set theirs too
    env: {
      PATH: process.env.PATH,
      PGPASSWORD: login.password,
      PGCONNECT_TIMEOUT: '10',
      PGOPTIONS: SAFE_SESSION_OPTIONS,
    },
  };
}

async function clientMajor(tool: string): Promise<number> {
  const child = spawn(tool, ['--version']);
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  await once(child, 'close');
  return Number(/(\d+)(?:\.\d+)?/.exec(out)?.[1] ?? 0);
}

/** pg_dump (or pg_restore) must be at least the server's major version; says so plainly when not. */
export async function checkClientVersion(config: PgConfig, tool: 'pg_dump' | 'pg_restore'): Promise<void> {
  const [client, server] = await Promise.all([clientMajor(tool), serverMajorVersion(config).then(Number)]);
  if (client < server) {
    throw new Error(
      `${tool} ${client} cannot work with the PostgreSQL ${server} server of the services: install the PostgreSQL ${server} client tools`,
    );
  }
}

export interface DataSource {
  login: ServiceLogin | null;
  /** `<root>/volumes/<environment id>`: its parent is root's, everything in it the environment's. */
  volume: string;
  /** Whose the files put back are (the environment's uid), or null: the worker's own (no sandbox). */
  owner?: { uid: number; gid: number } | null;
}

/**
 * The directory holding the volume (`<root>/volumes`, root's) and the volume's name in it: every operation on
 * the volume and its staging copies goes through a descriptor of it (no-follow.ts), never by path.
 */
async function volumesDir(volume: string): Promise<{ dir: Dir; name: string }> {
  await mkdir(path.dirname(volume), { recursive: true });
  return { dir: await Dir.open(path.dirname(volume)), name: path.basename(volume) };
}

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

/** Writes to a child's stdin with back-pressure; rejects when the child is gone. */
export async function write(child: ChildProcessWithoutNullStreams, data: Buffer): Promise<void> {
  if (child.stdin.write(data)) return;
  // the listeners of the wait that lost are taken away: a restore waits on drain thousands of times
  const done = new AbortController();
  try {
    await Promise.race([
      once(child.stdin, 'drain', { signal: done.signal }),
      once(child, 'close', { signal: done.signal }).then(() =>
        Promise.reject(new Error('the restoring process ended early')),
      ),
    ]);
  } finally {
    done.abort();
  }
}

export async function finish(child: ChildProcessWithoutNullStreams, what: string, stderr: () => string): Promise<void> {
  child.stdin.end();
  const [code, sig] = (child.exitCode !== null ? [child.exitCode, null] : await once(child, 'close')) as [
    number | null,
    string | null,
  ];
  if (code !== 0)
    throw new Error(`${what} failed (${sig ?? `exit ${code}`}): ${stderr().trim().split('\n').slice(-3).join(' ')}`);
}

export function spawnSink(cmd: string, args: string[], env?: Record<string, string | undefined>) {
  return watchSink(spawn(cmd, args, { env: env ?? { PATH: process.env.PATH } }));
}

export function watchSink(child: ChildProcessWithoutNullStreams) {
  let stderr = '';
  child.stderr.on('data', (c) => (stderr = (stderr + c).slice(-2000)));
  child.stdin.on('error', () => undefined); // EPIPE: reported by the exit code
  child.stdout.resume();
  return { child, stderr: () => stderr };
}

/** The file next to the volume naming the put-back whose files were swapped in last. */
const filesMark = (name: string) => `${name}.put-back`;

/**
 * A files swap cut between its two renames (worker killed) leaves `<volume>.old` and no `<volume>`: the
 * original is renamed back, so the environment never stays without its files.
 */
async function recoverInterruptedFilesSwap(vols: Dir, name: string): Promise<void> {
  if (!(await vols.lstat(name)) && (await vols.lstat(`${name}.old`))) await vols.rename(`${name}.old`, name);
}

/**
 * Puts parts back into the environment: the database into a fresh `<db>_restore` database and the files
 * into a fresh `<volume>.restore` directory; only when every part is complete are both swapped in. Until
 * then the live database and files are untouched, so a failure (or a worker killed) leaves them as they were.
 * The staging directory is root's (0700) while tar writes into it, so no tenant reaches it; once complete it
 * is given to the environment's uid (from its descriptor) and renamed in. `marker` (the task's id) marks
 * what was swapped in, for `settlePutBack`. Running it again (a retried activity) starts over from fresh
 * staging copies.
 */
export async function putBack(opts: {
  config: PgConfig;
  target: DataSource;
  parts: AsyncIterable<{ part: PartName; data: Buffer }>;
  marker?: string;
  /** Keep the replaced database under this name (a point-in-time restore) instead of dropping it. */
  keepAs?: string;
  onLine?: (line: string) => void;
}): Promise<PartName[]> {
  const { config, target } = opts;
  const say = opts.onLine ?? (() => undefined);
  const seen: PartName[] = [];
  const vols = target.volume ? await volumesDir(target.volume) : null;
  const staged = vols ? `${vols.name}.restore` : '';
  let stagedDir: Dir | null = null;
  let sink: ReturnType<typeof spawnSink> | null = null;
  let sinkPart: PartName | null = null;
  const close = async () => {
    if (sink && sinkPart) await finish(sink.child, sinkPart === 'database' ? 'pg_restore' : 'tar -x', sink.stderr);
    sink = null;
  };
  const open = async (part: PartName) => {
    await close();
    sinkPart = part;
    seen.push(part);
    if (part === 'database') {
      if (!target.login) throw new Error('the snapshot holds a database but the environment has no database service');
      await checkClientVersion(config, 'pg_restore');
      const restoreLogin = await createRestoreTarget(config, target.login);
      const { args, env } = pgLogin(config, restoreLogin);
      say('==> Restoring the database into a fresh copy');
      sink = spawnSink('pg_restore', ['--no-owner', '--no-acl', '--exit-on-error', ...args], env);
    } else {
      if (!vols) throw new Error('the environment has no volume to put files back into');
      await vols.dir.remove(staged);
      stagedDir = await vols.dir.dir(staged, { create: 0o700 });
      say('==> Restoring the files into a fresh copy');
      sink = watchSink(spawnIn([stagedDir], 'tar', ['--numeric-owner', '-xf', '-']));
    }
  };
  try {
    try {
      if (vols) await recoverInterruptedFilesSwap(vols.dir, vols.name);
      for await (const { part, data } of opts.parts) {
        if (part !== sinkPart) await open(part);
        if (data.length) await write(sink!.child, data);
      }
      await close();
    } catch (err) {
      if (sink) (sink as ReturnType<typeof spawnSink>).child.kill('SIGKILL');
      if (vols) await vols.dir.remove(staged);
      throw err;
    }
    // Every part is complete: swap them in.
    if (seen.includes('database') && target.login) {
      if (opts.keepAs && opts.marker) await swapInRestoredKeeping(config, target.login, opts.keepAs, opts.marker);
      else await swapInRestored(config, target.login, opts.marker);
    }
    if (seen.includes('files') && vols && stagedDir) {
      const d = stagedDir as Dir;
      if (target.owner) await d.chownTree(target.owner.uid, target.owner.gid);
      await d.chmod(0o700);
      const old = `${vols.name}.old`;
      await vols.dir.remove(old);
      if (await vols.dir.lstat(vols.name)) await vols.dir.rename(vols.name, old);
      await vols.dir.rename(staged, vols.name);
      if (opts.marker) {
        await vols.dir.unlink(filesMark(vols.name));
        await vols.dir.writeNew(filesMark(vols.name), opts.marker);
      }
      await vols.dir.remove(old);
    }
    return seen;
  } finally {
    await (stagedDir as Dir | null)?.close();
    await vols?.dir.close();
  }
}

export interface PutBackState {
  database: 'put_back' | 'unchanged' | 'none';
  files: 'put_back' | 'unchanged';
}

/**
 * After a put-back that did not complete: rolls back a swap cut half way, removes the staging copies
 * (`<db>_restore`, `<volume>.restore`, `<volume>.old`) and says, part by part, whether the live data is
 * what the put-back marked `marker` swapped in or still what was there before. Never half of either.
 */
export async function settlePutBack(opts: { config: PgConfig; target: DataSource; marker: string }) {
  const { target, marker } = opts;
  const vols = await volumesDir(target.volume);
  let mark = '';
  try {
    await recoverInterruptedFilesSwap(vols.dir, vols.name);
    await vols.dir.remove(`${vols.name}.restore`);
    await vols.dir.remove(`${vols.name}.old`);
    mark = await vols.dir
      .file(filesMark(vols.name))
      .then(async (fh) => fh.readFile('utf8').finally(() => fh.close()))
      .catch(() => '');
  } finally {
    await vols.dir.close();
  }
  const state: PutBackState = {
    database: target.login ? await settleRestoreTarget(opts.config, target.login, marker) : 'none',
    files: mark === marker ? 'put_back' : 'unchanged',
  };
  return state;
}

/** One sentence for the task: what the environment's data is after a put-back that failed. */
export function describePutBackState(state: PutBackState, what: string): string {
  const db = state.database;
  if (db !== 'put_back' && state.files === 'unchanged')
    return `the environment's database and files are as they were before the ${what} (nothing was changed)`;
  if (db === 'put_back' && state.files === 'put_back')
    return `the database and the files were both put back completely before the ${what} stopped`;
  if (db === 'put_back') return `the database was put back completely; the files are as they were before the ${what}`;
  return db === 'none'
    ? `the files were put back completely before the ${what} stopped`
    : `the files were put back completely; the database is as it was before the ${what}`;
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

/** Copies one environment's data into another (sync), no snapshot in between. */
export async function copyData(opts: {
  config: PgConfig;
  /** Reads the source's volume: the provider of this host. */
  volumes: VolumeReader;
  source: DataSource;
  target: DataSource;
  marker?: string;
  onLine?: (line: string) => void;
}) {
  if (opts.source.login) await checkClientVersion(opts.config, 'pg_dump');
  return putBack({
    config: opts.config,
    target: opts.target,
    parts: flatten(dataParts(opts.config, opts.volumes, opts.source)),
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
