/**
 * Putting a snapshot's parts back into an environment (a restore, a sync, a reshape's copy, a volume's move): the
 * database into a fresh `<db>_restore` (host/pg-restore.ts) and the files into a fresh `<volume>.restore`, both
 * swapped in only once every part is complete; and, after a put-back that did not complete, settling what the
 * environment's data is (`settlePutBack`) and saying it in one sentence (`describePutBackState`).
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../../system/config';
import type { ServiceLogin } from '../../host/pg-server';
import { createRestoreTarget, settleRestoreTarget, swapInRestored, swapInRestoredKeeping } from '../../host/pg-restore';
import type { PartName } from '../../host/snapshot-format';
import { Dir, spawnIn } from '../../host/no-follow';
import { checkClientVersion, finish, pgLogin, spawnSink, watchSink, write } from './child-streams';

type PgConfig = Pick<Config, 'servicesDatabaseUrl' | 'databaseUrl'>;

/** An environment's data: its database (if it has one) and its volume; what a backup takes, or a put-back's target. */
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
    if (sink && sinkPart) await finish(sink, sinkPart === 'database' ? 'pg_restore' : 'tar -x');
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

interface PutBackState {
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
