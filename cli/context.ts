import type { Command } from 'commander';
import { Client } from './client';
import { resolveTarget, type Target } from './config';
import { CliError } from './errors';
import { note } from './output';

/** What every command works with: the console, the caller's credential, and the output mode. */
export interface Ctx {
  client: Client;
  target: Target;
  json: boolean;
}

export interface GlobalOptions {
  api?: string;
  json?: boolean;
}

export function contextOf(cmd: Command, opts: { signedIn?: boolean } = { signedIn: true }): Ctx {
  const o = cmd.optsWithGlobals<GlobalOptions>();
  const target = resolveTarget(o.api);
  if (opts.signedIn && !target.credential) {
    throw new CliError(
      `Not signed in to ${target.origin}: run \`service login --api ${target.origin}\`, or set VC_TOKEN to a personal access token`,
    );
  }
  return { client: new Client(target.origin, target.credential, note), target, json: Boolean(o.json) };
}
