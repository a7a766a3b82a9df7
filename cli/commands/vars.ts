import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { contextOf } from '../context';
import { CliError } from '../errors';
import { exitCodeOf, followTask, reportOutcome, type Task } from '../follow';
import { note, out, printJson, status, table } from '../output';
import { resolveEnvironment } from '../resolve';

/** An environment's variables (CONTRACT "Variables"); a secret value is never shown back. */

interface Variable {
  name: string;
  value: string | null;
  secret: boolean;
  source?: 'project' | 'environment';
  updated_at: string;
}

function readText(file: string): string {
  try {
    return file === '-' ? readFileSync(0, 'utf8') : readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`Cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** NAME=VALUE as typed on the command line (the value may contain "="). */
function assignment(arg: string): { name: string; value: string } {
  const i = arg.indexOf('=');
  if (i <= 0) throw new CliError(`"${arg}" is not NAME=VALUE`);
  return { name: arg.slice(0, i), value: arg.slice(i + 1) };
}

export function register(program: Command): void {
  const vars = program
    .command('vars')
    .description("An environment's variables: list, set, unset, import a .env file, apply");

  vars
    .command('list')
    .description("The effective variables of an environment (its own and the project's); secrets show as [secret]")
    .argument('<env>', 'id or project/environment')
    .action(async (ref: string, _o, cmd: Command) => {
      const ctx = contextOf(cmd);
      const env = await resolveEnvironment(ctx.client, ref);
      const body = await ctx.client.get<{ data: Variable[]; live: { applied: boolean; since: string } | null }>(
        `/environments/${env.id}/variables`,
      );
      if (ctx.json) return printJson(body);
      table(
        ['name', 'value', 'source', 'updated'],
        body.data.map((v) => [v.name, v.secret ? '[secret]' : v.value, v.source, v.updated_at]),
        'No variables',
      );
      // on stderr: whether the running processes have this set
      if (body.live?.applied === false)
        note(
          `Changed since the app started (${body.live.since}): not live yet; \`service vars apply ${ref}\` restarts it with these.`,
        );
      else if (body.live) note(`The app runs with these (started with them ${body.live.since}).`);
    });

  vars
    .command('set')
    .description('Set variables of an environment (created or replaced)')
    .argument('<env>', 'id or project/environment')
    .argument('<assignments...>', 'NAME=VALUE, one or more')
    .option('--secret', 'write-only values: never shown again, [secret] in logs')
    .action(async (ref: string, pairs: string[], opts: { secret?: boolean }, cmd: Command) => {
      const ctx = contextOf(cmd);
      const parsed = pairs.map(assignment);
      const env = await resolveEnvironment(ctx.client, ref);
      const saved: Variable[] = [];
      for (const { name, value } of parsed) {
        const body = { name, value, ...(opts.secret ? { secret: true } : {}) };
        saved.push(await ctx.client.post<Variable>(`/environments/${env.id}/variables`, body));
      }
      if (ctx.json) return printJson({ data: saved });
      out(`Set ${parsed.map((p) => p.name).join(', ')} on ${env.name}.`);
      note(`Running processes get them with \`service vars apply ${ref}\` or the next deploy.`);
    });

  vars
    .command('unset')
    .description("Remove an environment's own value of variables (the project's value, if any, applies again)")
    .argument('<env>', 'id or project/environment')
    .argument('<names...>', 'variable names')
    .action(async (ref: string, names: string[], _o, cmd: Command) => {
      const ctx = contextOf(cmd);
      const env = await resolveEnvironment(ctx.client, ref);
      for (const name of names)
        await ctx.client.request('DELETE', `/environments/${env.id}/variables/${encodeURIComponent(name)}`);
      if (!ctx.json) out(`Removed ${names.join(', ')} from ${env.name}.`);
    });

  vars
    .command('import')
    .description('Import a .env file (all or nothing); existing names are skipped unless --overwrite')
    .argument('<env>', 'id or project/environment')
    .argument('<file>', 'the .env file ("-" for standard input)')
    .option('--secret', 'import every value as a secret')
    .option('--overwrite', 'replace variables that exist')
    .action(async (ref: string, file: string, opts: { secret?: boolean; overwrite?: boolean }, cmd: Command) => {
      const ctx = contextOf(cmd);
      const text = readText(file);
      const env = await resolveEnvironment(ctx.client, ref);
      const result = await ctx.client.post<Record<'created' | 'updated' | 'unchanged' | 'skipped', string[]>>(
        `/environments/${env.id}/variables/import`,
        { text, ...(opts.secret ? { secret: true } : {}), ...(opts.overwrite ? { overwrite: true } : {}) },
      );
      if (ctx.json) return printJson(result);
      for (const k of ['created', 'updated', 'unchanged', 'skipped'] as const) {
        if (result[k]?.length) out(`${k}: ${result[k].join(', ')}`);
      }
      if (result.skipped?.length) note('Skipped names exist already; repeat with --overwrite to replace them.');
    });

  vars
    .command('apply')
    .description("Restart the environment's web processes with the current variables (no build)")
    .argument('<env>', 'id or project/environment')
    .option('--wait', 'print the log live and exit with the outcome')
    .action(async (ref: string, opts: { wait?: boolean }, cmd: Command) => {
      const ctx = contextOf(cmd);
      const env = await resolveEnvironment(ctx.client, ref);
      const task = await ctx.client.startTask<Task>(`/environments/${env.id}/variables/apply`);
      if (!opts.wait) {
        if (ctx.json) return printJson(task);
        return out(`Task ${task.id} (apply_variables of ${env.name}) is ${status(task.status)}.`);
      }
      const write = (text: string) => (ctx.json ? process.stderr : process.stdout).write(text);
      const ended = await followTask(ctx.client, task.id, {
        write,
        label: `apply variables ${env.name} (task ${task.id})`,
      });
      if (ctx.json) printJson(ended);
      reportOutcome(ended);
      process.exitCode = exitCodeOf(ended);
    });
}
