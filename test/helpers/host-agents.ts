/**
 * What test/system/hosts.test.ts reads of the processes it runs: the settings `hosts -- join --env-file` wrote,
 * the edge's HAProxy backends through its admin socket, and a load run with Debian's `wrk`.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { runtimeCommand } from '../../edge/runtime-command';
import { haproxyPaths } from '../../edge/haproxy/paths';
import { backendName } from '../../edge/haproxy/model';

/** The KEY=value lines of an env file (`'...'` quotes taken off), comments skipped. */
export function readEnvFile(file: string): Record<string, string> {
  return Object.fromEntries(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1).replace(/^'(.*)'$/, '$1')]),
  );
}

/** The servers of the environment's backend (its public `port`) as the HAProxy of `dataDir` holds them. */
export async function backendServers(
  dataDir: string,
  port: number,
): Promise<{ name: string; addr: string; port: number; on: boolean }[]> {
  const text = await runtimeCommand(haproxyPaths(dataDir).admin, 'show servers state');
  const lines = text.split('\n').filter((l) => l.trim());
  const header = lines
    .find((l) => l.startsWith('# be_id'))!
    .slice(2)
    .split(' ');
  const col = (name: string) => header.indexOf(name);
  return (
    lines
      .filter((l) => !l.startsWith('#') && /^\d+ /.test(l))
      .map((l) => l.split(' '))
      .filter((f) => f[col('be_name')] === backendName(port))
      .map((f) => ({
        name: f[col('srv_name')],
        addr: f[col('srv_addr')],
        port: Number(f[col('srv_port')]),
        // srv_admin_state: bit 0x01 is maintenance forced from the configuration, 0x20 from the runtime
        on: (Number(f[col('srv_admin_state')]) & 0x21) === 0,
      }))
      // an idle slot's placeholder, never used
      .filter((s) => !(s.addr === '127.0.0.1' && s.port === 1))
  );
}

interface WrkResult {
  requests: number;
  non2xx: number;
  socketErrors: number;
  output: string;
}

/**
 * `wrk -t1 -c4 --latency URL` (the requests it completed, its non-2xx/3xx answers and socket errors) until
 * `stop()`, or `seconds` at most; `stop()` ends it as Ctrl-C does (wrk prints its figures for the requests it made)
 * and resolves with them.
 */
export function runWrk(url: string, seconds: number): { done: Promise<WrkResult>; stop: () => Promise<WrkResult> } {
  const child = spawn('wrk', ['-t1', '-c4', `-d${seconds}s`, '--latency', url], { stdio: ['ignore', 'pipe', 'pipe'] });
  const done = new Promise<WrkResult>((resolve, reject) => {
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d));
    child.stderr.on('data', (d: Buffer) => (output += d));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`wrk exited ${code}: ${output}`));
      const requests = Number(/(\d+) requests in/.exec(output)?.[1] ?? Number.NaN);
      const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0);
      const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
      const socketErrors = socket ? socket.slice(1).reduce((n, x) => n + Number(x), 0) : 0;
      resolve({ requests, non2xx, socketErrors, output });
    });
  });
  return {
    done,
    stop: () => {
      if (child.exitCode === null) child.kill('SIGINT');
      return done;
    },
  };
}
