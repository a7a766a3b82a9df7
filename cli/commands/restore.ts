import type { Command } from 'commander';
import { contextOf, type Ctx } from '../context';
import { ApiError, CliError } from '../errors';
import { exitCodeOf, followTask, reportOutcome, type Task } from '../follow';
import { note, out, printJson, status } from '../output';
import { resolveEnvironment, type Environment } from '../resolve';

/**
 * `service backup restore ENV SNAPSHOT` (a snapshot back) and `service backup restore ENV --at <ISO time>`
 * (the database as it was at that second, CONTRACT "Point-in-time recovery"); `service backup verify ENV
 * SNAPSHOT` (a restore drill). A restore is a person's: with VC_TOKEN the API answers token_not_allowed. Over a
 * protected environment the client asks for the caller's password (from the terminal without echo, else the
 * first line of stdin) and sends it along; the API also wants a sign-in younger than an hour.
 */

const ENV_ARG = 'id or project/environment';

/** One line from the terminal without echoing it, or the first line of a piped stdin. */
async function readPassword(prompt: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(prompt);
  if (!stdin.isTTY) {
    let text = '';
    stdin.setEncoding('utf8');
    for await (const chunk of stdin) {
      text += chunk;
      if (text.includes('\n')) break;
    }
    stdin.pause();
    return text.split(/\r?\n/)[0];
  }
  return new Promise((resolve, reject) => {
    let typed = '';
    stdin.setRawMode(true);
    stdin.setEncoding('utf8');
    stdin.resume();
    const done = (err?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(typed);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') return done();
        if (ch === '\u0003') return done(new CliError('Cancelled'));
        if (ch === '\u007f' || ch === '\b') typed = typed.slice(0, -1);
        else typed += ch;
      }
    };
    stdin.on('data', onData);
  });
}

/** The ISO time of --at, as the API takes it (UTC), or a usage refusal naming the option. */
function pointInTime(at: string): string {
  const ms = Date.parse(at);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(at) || Number.isNaN(ms))
    throw new CliError(`--at must be an ISO time such as 2026-11-29T14:02:59Z, not "${at}"`);
  return new Date(ms).toISOString().replace(/\.000Z$/, 'Z');
}

async function startRestore(ctx: Ctx, env: Environment & { protected?: boolean }, path: string, body: object) {
  // A token never restores: the API says so; no password is asked for first.
  const asks = env.protected === true && ctx.target.via !== 'VC_TOKEN';
  const password = asks ? await readPassword(`Password (${env.name} is protected): `) : undefined;
  try {
    return await ctx.client.startTask<Task>(path, password === undefined ? body : { ...body, password });
  } catch (err) {
    if (err instanceof ApiError && err.code === 'reauthentication_required') {
      throw new CliError(
        `Restoring over the protected ${env.name} needs your password and a sign-in younger than an hour: check the password, or run \`service login\` again`,
      );
    }
    throw err;
  }
}

async function report(ctx: Ctx, task: Task, what: string, wait: boolean | undefined): Promise<void> {
  if (!wait) {
    if (ctx.json) return printJson(task);
    out(`Task ${task.id} (${what}) is ${status(task.status)}.`);
    return note(`Follow it with: service task ${task.id} --follow`);
  }
  const write = (text: string) => (ctx.json ? process.stderr : process.stdout).write(text);
  const ended = await followTask(ctx.client, task.id, { write, label: `${what} (task ${task.id})` });
  if (ctx.json) printJson(ended);
  reportOutcome(ended);
  process.exitCode = exitCodeOf(ended);
}

export function register(backup: Command): void {
  backup
    .command('restore')
    .description(
      'Put a snapshot back (SNAPSHOT), or the database as it was at a second (--at); asks for your password over a protected environment',
    )
    .argument('<env>', ENV_ARG)
    .argument('[snapshot]', "the snapshot's id (`service backup list`); leave it out with --at")
    .option('--at <time>', 'an ISO time (e.g. 2026-11-29T14:02:59Z): the database as it was then (sent as UTC)')
    .option('--wait', 'print the log live and exit with the outcome: 0 succeeded, 1 failed, 2 cancelled')
    .action(async (ref: string, snapshot: string | undefined, opts: { at?: string; wait?: boolean }, cmd: Command) => {
      if (Boolean(snapshot) === Boolean(opts.at))
        throw new CliError('Give either a SNAPSHOT or --at <ISO time>, not both nor neither');
      const at = opts.at ? pointInTime(opts.at) : undefined;
      const ctx = contextOf(cmd);
      const env = await resolveEnvironment(ctx.client, ref);
      const task = at
        ? await startRestore(ctx, env, `/environments/${env.id}/restore`, { point_in_time: at, confirm: true })
        : await startRestore(ctx, env, `/environments/${env.id}/backups/${encodeURIComponent(snapshot!)}/restore`, {});
      await report(ctx, task, at ? `restore of ${env.name} to ${at}` : `restore of ${env.name}`, opts.wait);
    });

  backup
    .command('verify')
    .description('A restore drill: the snapshot restored into scratch and compared with what its backup recorded')
    .argument('<env>', ENV_ARG)
    .argument('<snapshot>', "the snapshot's id (`service backup list`)")
    .option('--wait', 'print the log live and exit with the outcome: 0 passed, 1 failed, 2 cancelled')
    .action(async (ref: string, snapshot: string, opts: { wait?: boolean }, cmd: Command) => {
      const ctx = contextOf(cmd);
      const env = await resolveEnvironment(ctx.client, ref);
      const task = await ctx.client.startTask<Task>(
        `/environments/${env.id}/backups/${encodeURIComponent(snapshot)}/verify`,
        {},
      );
      await report(ctx, task, `restore drill of ${env.name}`, opts.wait);
    });
}
