import { createWriteStream, rmSync } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebStream } from 'node:stream/web';
import type { Command } from 'commander';
import { decryptSnapshot, SnapshotError } from '../../scripts/snapshot-decrypt.mjs';
import { contextOf, type Ctx } from '../context';
import { ApiError, CliError } from '../errors';
import { exitCodeOf, followTask, reportOutcome, type Task } from '../follow';
import { note, out, printJson, status, table } from '../output';
import { resolveEnvironment, type Environment } from '../resolve';
import { register as restore } from './restore';

/**
 * An environment's backups (CONTRACT "Backups"): list, take one, download one. Signed-in only (a `vcs_`
 * session): the API refuses a token with token_not_allowed, which the client turns into `service login`.
 */

interface Snapshot {
  id: string;
  status: string;
  trigger: string;
  contents: string[];
  size_bytes: number | null;
  destination_id: string;
  created_at: string;
  verified_at: string | null;
  verify_error: string | null;
}

const ENV_ARG = 'id or project/environment';

/** The environment's backup key (a recent sign-in), as the 32 bytes the decryption needs. */
async function backupKey(ctx: Ctx, env: Environment): Promise<Buffer> {
  try {
    const { key } = await ctx.client.post<{ key: string }>(`/environments/${env.id}/backup-key`, {});
    return Buffer.from(key, 'base64');
  } catch (err) {
    if (err instanceof ApiError && err.code === 'reauthentication_required') {
      throw new CliError(
        `Revealing the backup key of ${env.name} needs a recent sign-in: run \`service login\` again, then repeat`,
      );
    }
    throw err;
  }
}

/** Streams the snapshot at `url` to `file`, or with a key decrypts it: the dump to `file`, the files next to it. */
async function download(url: string, file: string, key: Buffer | undefined): Promise<string[]> {
  let res: Response;
  try {
    res = await fetch(url);
  } catch (err) {
    throw new CliError(`Cannot fetch the snapshot (${(err as Error).message})`);
  }
  if (!res.ok || !res.body) throw new CliError(`The snapshot's link answered ${res.status}: ask for a new one`);
  const body = Readable.fromWeb(res.body as WebStream<Uint8Array>);
  const files = key ? [file, `${file}.files.tar`] : [file];
  try {
    if (!key) await pipeline(body, createWriteStream(file));
    else await decryptSnapshot(key, body, (part) => createWriteStream(part === 'database' ? files[0] : files[1]));
  } catch (err) {
    for (const f of files) rmSync(f, { force: true });
    if (err instanceof SnapshotError) throw new CliError(`Cannot decrypt the snapshot: ${err.message}`);
    throw new CliError(`Cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return files;
}

export function register(program: Command): void {
  const backup = program
    .command('backup')
    .description("An environment's backups: list, create, download, restore, verify (needs `service login`)");

  backup
    .command('list')
    .description('The snapshots of an environment, newest first')
    .argument('<env>', ENV_ARG)
    .action(async (ref: string, _o, cmd: Command) => {
      const ctx = contextOf(cmd);
      const env = await resolveEnvironment(ctx.client, ref);
      const body = await ctx.client.get<{ data: Snapshot[] }>(`/environments/${env.id}/backups`);
      if (ctx.json) return printJson(body);
      table(
        ['id', 'status', 'trigger', 'contents', 'bytes', 'created', 'verified'],
        body.data.map((s) => [
          s.id,
          status(s.status),
          s.trigger,
          s.contents.join(','),
          s.size_bytes,
          s.created_at,
          s.verify_error ? `failed: ${s.verify_error}` : (s.verified_at ?? '-'),
        ]),
        'No backups',
      );
    });

  backup
    .command('create')
    .description('Take an encrypted snapshot of the database and files to a backup destination')
    .argument('<env>', ENV_ARG)
    .option('--destination <id>', "the backup destination's id (else the backup window's destination)")
    .option('--wait', 'print the log live and exit with the outcome: 0 succeeded, 1 failed, 2 cancelled')
    .action(async (ref: string, opts: { destination?: string; wait?: boolean }, cmd: Command) => {
      const ctx = contextOf(cmd);
      const env = await resolveEnvironment(ctx.client, ref);
      const body = opts.destination ? { destination_id: opts.destination } : {};
      const task = await ctx.client.startTask<Task>(`/environments/${env.id}/backups`, body);
      if (!opts.wait) {
        if (ctx.json) return printJson(task);
        out(`Task ${task.id} (backup of ${env.name}) is ${status(task.status)}.`);
        return note(`Follow it with: service task ${task.id} --follow`);
      }
      const write = (text: string) => (ctx.json ? process.stderr : process.stdout).write(text);
      const ended = await followTask(ctx.client, task.id, { write, label: `backup ${env.name} (task ${task.id})` });
      if (ctx.json) printJson(ended);
      reportOutcome(ended);
      process.exitCode = exitCodeOf(ended);
    });

  backup
    .command('download')
    .description('Download a snapshot (encrypted; --decrypt gives the pg_restore dump and a tar of the files)')
    .argument('<env>', ENV_ARG)
    .argument('<snapshot>', "the snapshot's id (`service backup list`)")
    .option('--out <file>', 'where to write it (default: <snapshot>.vcb, or <snapshot>.dump with --decrypt)')
    .option('--decrypt', "decrypt with the environment's backup key (a recent sign-in): FILE and FILE.files.tar")
    .action(async (ref: string, snapshot: string, opts: { out?: string; decrypt?: boolean }, cmd: Command) => {
      const ctx = contextOf(cmd);
      const env = await resolveEnvironment(ctx.client, ref);
      const link = await ctx.client.post<{ url: string; expires_at: string }>(
        `/environments/${env.id}/backups/${encodeURIComponent(snapshot)}/download`,
        {},
      );
      const key = opts.decrypt ? await backupKey(ctx, env) : undefined;
      const file = opts.out ?? `${snapshot}.${opts.decrypt ? 'dump' : 'vcb'}`;
      const files = await download(link.url, file, key);
      if (ctx.json) return printJson({ snapshot, files, decrypted: Boolean(key) });
      out(`Wrote ${files.join(' and ')}${key ? ' (decrypted)' : ''}.`);
      if (key) note(`List the dump with: pg_restore --list ${file}`);
      else note('Decrypt it with --decrypt, or scripts/decrypt-backup.mjs and the backup key.');
    });
  restore(backup);
}
