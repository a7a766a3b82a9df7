/**
 * A restore drill: a snapshot read back from its destination (its size and SHA-256 checked against its row),
 * decrypted, its database restored with pg_restore into a scratch database (host/pg-scratch.ts: a throwaway
 * role of its own) and its files with tar into a scratch directory (`DATA_DIR/drills/<name>`, root's, 0700),
 * then compared with what the backup recorded (snapshot-counts.ts): every table and its row count, and the
 * number of entries of the files. A snapshot taken before counts were recorded is proven by its restore alone.
 * Everything it made is removed when it ends, and again by `removeDrillScratch` after a worker was killed.
 */
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../../system/config';
import type { SnapshotCounts } from '../../db/models/backup';
import { decryptSnapshot, type PartName } from '../../host/snapshot-format';
import type { ObjectStore, StoredObject } from '../../host/destinations';
import { Dir, spawnIn } from '../../host/no-follow';
import { createScratchDatabase, dropScratchDatabase } from '../../host/pg-scratch';
import type { ServiceLogin } from '../../host/pg-server';
import { checkClientVersion, finish, pgLogin, spawnSink, watchSink, write } from './child-streams';
import { tableCounts } from './row-counts';

type DrillConfig = Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl' | 'dataDir'>;

interface DrillOutcome {
  /** What the scratch copy holds. */
  restored: { parts: PartName[]; tables: number | null; rows: number | null; files: number | null };
  /** Whether it was compared with counts the backup recorded (false: an older snapshot, its restore alone). */
  compared: boolean;
}

/** The directory holding the drills' scratch directories (root's, 0700). */
const drillsDir = async (config: Pick<Config, 'dataDir'>) => {
  const dir = path.join(config.dataDir, 'drills');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  return Dir.open(dir);
};

/** Entries under a directory, itself included (as `tar -cf - .` lists `./`), never following a link. */
async function countEntries(dir: string): Promise<number> {
  let n = 1;
  for (const e of await readdir(dir, { withFileTypes: true })) {
    n += e.isDirectory() ? await countEntries(path.join(dir, e.name)) : 1;
  }
  return n;
}

/** Up to five differences between what the backup recorded and what the scratch copy holds, as sentences. */
function compareCounts(recorded: SnapshotCounts, found: { tables: Record<string, number> | null; files: number }) {
  const diffs: string[] = [];
  if (recorded.tables) {
    const got = found.tables ?? {};
    for (const [table, rows] of Object.entries(recorded.tables)) {
      if (!(table in got)) diffs.push(`table ${table} (${rows} rows in the backup) is missing`);
      else if (got[table] !== rows) diffs.push(`table ${table} has ${got[table]} rows, the backup recorded ${rows}`);
    }
    for (const table of Object.keys(got))
      if (!(table in recorded.tables)) diffs.push(`table ${table} was not in the backup`);
  }
  if (recorded.files !== null && recorded.files !== found.files)
    diffs.push(`${found.files} files and directories came back, the backup recorded ${recorded.files}`);
  return diffs.length > 5 ? [...diffs.slice(0, 5), `and ${diffs.length - 5} more differences`] : diffs;
}

export async function drillSnapshot(opts: {
  config: DrillConfig;
  store: ObjectStore;
  objectKey: string;
  expected: StoredObject;
  key: Buffer;
  /** What the snapshot's row says it holds (`contents`) and recorded (`counts`, null before drills). */
  contents: PartName[];
  recorded: SnapshotCounts | null;
  /** The scratch database, role and directory name (host/pg-scratch.ts scratchName). */
  scratch: string;
  onLine?: (line: string) => void;
}): Promise<DrillOutcome> {
  const { config, scratch } = opts;
  const say = opts.onLine ?? (() => undefined);
  const drills = await drillsDir(config);
  let login: ServiceLogin | null = null;
  let filesDir: Dir | null = null;
  let sink: ReturnType<typeof spawnSink> | null = null;
  let sinkPart: PartName | null = null;
  const seen: PartName[] = [];
  const close = async () => {
    if (sink && sinkPart) await finish(sink, sinkPart === 'database' ? 'pg_restore' : 'tar -x');
    sink = null;
  };
  try {
    const body = await opts.store.get(opts.objectKey, opts.expected);
    say('==> Read the snapshot back: its size and SHA-256 are those the backup stored');
    try {
      for await (const { part, data } of decryptSnapshot(opts.key, body)) {
        if (part !== sinkPart) {
          await close();
          sinkPart = part;
          seen.push(part);
          if (part === 'database') {
            await checkClientVersion(config, 'pg_restore');
            login = await createScratchDatabase(config, scratch);
            const { args, env } = pgLogin(config, login);
            say('==> Restoring the database into a scratch database');
            sink = spawnSink('pg_restore', ['--no-owner', '--no-acl', '--exit-on-error', ...args], env);
          } else {
            await drills.remove(scratch);
            filesDir = await drills.dir(scratch, { create: 0o700 });
            say('==> Restoring the files into a scratch directory');
            sink = watchSink(spawnIn([filesDir], 'tar', ['--numeric-owner', '-xf', '-']));
          }
        }
        if (data.length) await write(sink!.child, data);
      }
      await close();
    } catch (err) {
      if (sink) (sink as ReturnType<typeof spawnSink>).child.kill('SIGKILL');
      throw err;
    } finally {
      body.destroy();
    }
    if (opts.contents.includes('database') && !seen.includes('database'))
      throw new Error('the snapshot holds no database, though its backup took one');
    const tables = login ? await tableCounts(config, login) : null;
    const files = filesDir ? await countEntries(path.join(config.dataDir, 'drills', scratch)) : 0;
    const restored = {
      parts: seen,
      tables: tables ? Object.keys(tables).length : null,
      rows: tables ? Object.values(tables).reduce((a, b) => a + b, 0) : null,
      files: seen.includes('files') ? files : null,
    };
    say(
      `==> Restored: ${restored.tables ?? 0} tables, ${restored.rows ?? 0} rows; ${restored.files ?? 0} files and directories`,
    );
    if (!opts.recorded) {
      say('==> The backup recorded no counts (taken before restore drills): proven by its restore alone');
      return { restored, compared: false };
    }
    const diffs = compareCounts(opts.recorded, { tables, files });
    if (diffs.length) throw new DrillMismatch(`the restored copy differs from the backup: ${diffs.join('; ')}`);
    say('==> Every table, its row count and the number of files match what the backup recorded');
    return { restored, compared: true };
  } finally {
    await (filesDir as Dir | null)?.close();
    await drills.close();
    await removeDrillScratch(config, scratch);
  }
}

/** The restored copy is not what the backup recorded. */
class DrillMismatch extends Error {}

/** Removes whatever a drill of that scratch name made: its scratch database and role, its scratch directory. */
export async function removeDrillScratch(config: DrillConfig, scratch: string): Promise<void> {
  await dropScratchDatabase(config, scratch);
  const drills = await drillsDir(config);
  try {
    await drills.remove(scratch);
  } finally {
    await drills.close();
  }
}
