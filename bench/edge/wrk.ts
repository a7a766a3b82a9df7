/** wrk (Debian's `wrk`, installed with apt as root when missing) and HAProxy's CPU time, for bench/edge.ts. */
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processCpuNs } from '../../host/provider/usage';

export function ensureWrk(): void {
  const has = () => spawnSync('sh', ['-c', 'command -v wrk'], { stdio: 'ignore' }).status === 0;
  if (has()) return;
  if (process.getuid?.() === 0) {
    console.log('[bench] installing wrk (apt-get install -y wrk)...');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    if (spawnSync('apt-get', ['install', '-y', '-q', 'wrk'], { stdio: 'inherit', env }).status !== 0) {
      spawnSync('apt-get', ['update', '-q'], { stdio: 'inherit', env });
      spawnSync('apt-get', ['install', '-y', '-q', 'wrk'], { stdio: 'inherit', env });
    }
  }
  if (!has()) throw new Error('the edge bench needs wrk: apt-get install -y wrk');
}

export interface WrkResult {
  name: string;
  requestsPerSecond: number;
  requests: number;
  /** wrk's own CPU time over the run (user + system, microseconds). */
  cpuMicros: number;
  /** Milliseconds. */
  p50: number;
  p99: number;
  errors: number;
}

const ms = (v: string, unit: string) => Number(v) * ({ us: 0.001, ms: 1, s: 1000 }[unit] ?? 1);

/** `wrk -t1 -c<connections> -d<seconds>s --latency [-s <script>] <url>`, parsed. */
export function wrk(name: string, url: string, seconds: number, connections = 32, script?: string): WrkResult {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', ...(script ? ['-s', script] : []), url];
  // bash's `times` prints its children's CPU time (wrk's) after it: user and system, e.g. `0m1.230s 0m0.450s`
  const out = execFileSync('bash', ['-c', 'wrk "$@" && times', 'wrk', ...args], {
    encoding: 'utf8',
  });
  const times = /^(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$/m.exec(out.trimEnd().split('\n').at(-1) ?? '');
  const cpuMicros = times
    ? (Number(times[1]) * 60 + Number(times[2]) + Number(times[3]) * 60 + Number(times[4])) * 1e6
    : Number.NaN;
  const pct = (p: string) => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(out);
    return m ? Math.round(ms(m[1], m[2]) * 1000) / 1000 : Number.NaN;
  };
  const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  return {
    name,
    requestsPerSecond: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0),
    requests: Number(/(\d+) requests in/.exec(out)?.[1] ?? 0),
    cpuMicros,
    p50: pct('50'),
    p99: pct('99'),
    errors: (errors ? errors.slice(1).reduce((n, x) => n + Number(x), 0) : 0) + Number(non2xx?.[1] ?? 0),
  };
}

/** CPU time (user + system, microseconds) of a process so far, from /proc (host/provider/usage.ts). */
export const processCpuMicros = (pid: number): number => processCpuNs(pid) / 1000;

/**
 * wrk at about `rate` requests a second (wrk has no rate of its own): each connection waits a few ms after each
 * answer (a script's `delay()`), as many connections as make the rate at 10 ms each, but never more than
 * `MAX_CONNECTIONS` (below the edge's EDGE_CONNECTIONS_PER_ADDRESS, 100: wrk asks from one address, and the
 * connections past the limit were closed, counted as errors, once this host's half rate needed 117); fewer
 * connections wait less each. Latency is measured per request, the waits left out. The rate reached is in the
 * result (`requestsPerSecond`).
 */
const DELAY_MS = 10;
const MAX_CONNECTIONS = 90;
export function wrkAtRate(name: string, url: string, seconds: number, rate: number, dir: string): WrkResult {
  const connections = Math.max(2, Math.min(MAX_CONNECTIONS, Math.round((rate * DELAY_MS) / 1000)));
  const delay = Math.max(1, Math.round((connections * 1000) / rate));
  const script = join(dir, `wrk-delay-${delay}.lua`);
  writeFileSync(script, `function delay()\n  return ${delay}\nend\n`);
  return wrk(name, url, seconds, connections, script);
}
