import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { contextOf } from '../context';
import { CliError } from '../errors';
import { details, out, printJson } from '../output';
import { resolveEnvironment } from '../resolve';

/** Checks a service.yaml with the console (POST /validate), or the one at an environment's ref head. */

interface Valid {
  valid: true;
  manifest: { build: string[]; deploy: string[]; web?: string; health?: string };
  source?: { git_ref: string; commit_sha: string; present: boolean };
}

export function register(program: Command): void {
  program
    .command('validate')
    .description('Check a service.yaml (invalid: exit 4 with each fault and its line)')
    .argument('[file]', 'the manifest file', 'service.yaml')
    .option('--env <env>', "check the service.yaml at the head of this environment's git ref instead of a file")
    .action(async (file: string, opts: { env?: string }, cmd: Command) => {
      const ctx = contextOf(cmd);
      let result: Valid;
      let what: string;
      if (opts.env) {
        const env = await resolveEnvironment(ctx.client, opts.env);
        result = await ctx.client.post<Valid>(`/environments/${env.id}/validate`, {});
        what = `service.yaml of ${env.name} at ${result.source?.git_ref} (${result.source?.commit_sha.slice(0, 12)})`;
      } else {
        let manifest: string;
        try {
          manifest = readFileSync(file, 'utf8');
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          throw new CliError(
            code === 'ENOENT'
              ? `No file ${file}: give the path of the service.yaml to check`
              : `Cannot read ${file}: ${code}`,
          );
        }
        result = await ctx.client.post<Valid>('/validate', { manifest });
        what = file;
      }
      if (ctx.json) return printJson(result);
      out(`${what} is valid.`);
      details([
        ['build', result.manifest.build.join(' && ')],
        ['deploy', result.manifest.deploy.join(' && ')],
        ['web', result.manifest.web],
        ['health', result.manifest.health],
      ]);
    });
}
