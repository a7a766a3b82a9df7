/**
 * Runs the `service` client as its own process, the way a person or a pipeline does: the package's
 * bin (cli/bin.mjs) under node, with HOME and XDG_CONFIG_HOME in a folder of the test's own.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import type { TestContext } from './context';

export const ROOT = path.resolve(__dirname, '../..');
const BIN = path.join(ROOT, 'cli/bin.mjs');

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliRun extends Promise<CliResult> {
  child: ChildProcess;
  /** Resolves once stdout or stderr has shown text matching the pattern (with that match). */
  waitFor(pattern: RegExp, stream?: 'stdout' | 'stderr', timeoutMs?: number): Promise<RegExpMatchArray>;
  output(): { stdout: string; stderr: string };
}

/** A home of its own for a test's client (its config folder under it). */
export function cliHome(t: TestContext): Record<string, string> {
  const home = mkdtempSync(path.join(t.dataDir, 'home-'));
  return { HOME: home, XDG_CONFIG_HOME: path.join(home, '.config') };
}

/**
 * Starts the client. The environment is the test process's minus anything VC_ or colour related, plus
 * VC_API (this file's API) and `env`.
 */
export function runCli(
  t: TestContext,
  args: string[],
  env: Record<string, string | undefined> = {},
  opts: { cwd?: string; command?: string[]; input?: string } = {},
): CliRun {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('VC_') && !['NO_COLOR', 'FORCE_COLOR', 'CI'].includes(k)),
  );
  const fullEnv = { ...base, VC_API: t.baseUrl, ...env } as Record<string, string>;
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete fullEnv[k];
  const [cmd, ...cmdArgs] = opts.command ?? [process.execPath, BIN, ...args];
  const stdin = opts.input === undefined ? 'ignore' : 'pipe';
  const child = spawn(cmd, cmdArgs, { cwd: opts.cwd ?? ROOT, env: fullEnv, stdio: [stdin, 'pipe', 'pipe'] });
  if (opts.input !== undefined) child.stdin!.end(opts.input);
  let stdout = '';
  let stderr = '';
  const watchers: Array<() => void> = [];
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
    watchers.forEach((w) => w());
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    watchers.forEach((w) => w());
  });
  const done = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  }) as CliRun;
  done.child = child;
  done.output = () => ({ stdout, stderr });
  done.waitFor = (pattern, stream = 'stdout', timeoutMs = 50_000) =>
    new Promise((resolve, reject) => {
      const check = () => {
        const m = (stream === 'stdout' ? stdout : stderr).match(pattern);
        if (m) {
          clearTimeout(timer);
          resolve(m);
          return true;
        }
        return false;
      };
      const timer = setTimeout(
        () =>
          reject(
            new Error(`client did not print ${pattern} on ${stream} in time; stdout:\n${stdout}\nstderr:\n${stderr}`),
          ),
        timeoutMs,
      );
      if (!check()) watchers.push(check);
    });
  return done;
}
