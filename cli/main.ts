import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { ApiError, CliError, EXIT } from './errors';
import { note, red } from './output';
import { register as auth } from './commands/auth';
import { register as reads } from './commands/reads';
import { register as deploys } from './commands/deploys';
import { register as vars } from './commands/vars';
import { register as backups } from './commands/backups';
import { register as validate } from './commands/validate';
import { register as completion } from './commands/completion';
import { register as api } from './commands/api';

/** `service`: the console from a terminal or a pipeline (CONTRACT "The `service` client"). */

const HELP_AFTER = `
Where and who:
  --api URL or VC_API     the console's origin (default: the last \`service login\`, else http://localhost:8080)
  VC_TOKEN                a personal access token (vcp_...) for pipelines; wins over a stored sign-in
  NO_COLOR                no colours (nor on a pipe or file)

Exit codes: 0 success; with --wait 1 failed, 2 cancelled; 3 refused because another task runs
(its id is named; --queue waits for it); 4 any other refusal.

Examples:
  service login
  service deploy shop/production --wait
  VC_TOKEN=vcp_... service deploy production --wait --queue     # in CI
  service tasks --environment shop/production --json
  service api /environments/{env}/domains --env shop/production   # any call the console makes`;

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
  .version;

function buildProgram(): Command {
  const program = new Command('service')
    .version(VERSION, '-V, --version', "print the client's version")
    .description('The hosting console from the command line: sign in, deploy and watch, tasks, variables')
    .addOption(new Option('--api <url>', "the console's origin, e.g. http://localhost:8080 (or VC_API)"))
    .option('--json', "print the API's JSON and nothing else on stdout")
    .showHelpAfterError('(run `service --help` or `service <command> --help` for usage)')
    .addHelpText('after', HELP_AFTER)
    .exitOverride();
  for (const register of [auth, reads, deploys, vars, backups, validate, api, completion]) register(program);
  for (const cmd of program.commands) {
    cmd.exitOverride();
    for (const sub of cmd.commands) sub.exitOverride();
  }
  return program;
}

/** One sentence (and the fields at fault) on stderr; the exit code of the refusal. */
function report(err: unknown): number {
  if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.refused;
  if (err instanceof CliError) {
    note(`${red('Error:', process.stderr)} ${err.message}`);
    for (const d of err.details) note(`  ${d}`);
    return err.exitCode;
  }
  if (err instanceof ApiError) {
    note(`${red('Error:', process.stderr)} ${explain(err)}`);
    for (const [field, why] of Object.entries(err.fields ?? {})) note(`  ${field}: ${why}`);
    return err.runningTaskId ? EXIT.busy : EXIT.refused;
  }
  // Not foreseen: still one line, no stack trace (set VC_DEBUG=1 for it).
  note(`${red('Error:', process.stderr)} ${(err as Error)?.message ?? String(err)}`);
  if (process.env.VC_DEBUG) note(String((err as Error)?.stack));
  return EXIT.refused;
}

/** The API's message, with what to do where the client knows better than the API. */
function explain(err: ApiError): string {
  if (err.status === 401) {
    return process.env.VC_TOKEN
      ? `VC_TOKEN was refused (${err.message}): issue a new personal access token in the console`
      : `${err.message}: run \`service login\` to sign in again`;
  }
  if (err.code === 'token_not_allowed') {
    return `${err.message}. This needs a person's sign-in: unset VC_TOKEN and run \`service login\``;
  }
  if (err.runningTaskId) return `${err.message} (task ${err.runningTaskId}); --queue waits for it`;
  return err.message;
}

export async function main(argv: string[]): Promise<void> {
  // `service tasks | head -1`: a reader that went away is not an error worth a stack trace.
  process.stdout.on('error', (err: NodeJS.ErrnoException) =>
    process.exit(err.code === 'EPIPE' ? EXIT.ok : EXIT.refused),
  );
  let code: number = EXIT.ok;
  try {
    await buildProgram().parseAsync(argv);
    code = typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (err) {
    code = report(err);
  }
  // Exit now: idle keep-alive sockets must not hold a pipeline's step open.
  process.stdout.write('', () => process.exit(code));
}
