/**
 * The CDN tier's figure (issue 18: a CDN HIT at least 3x the app's own throughput), measured with wrk in
 * alternating rounds: the app's cacheable page (bench/edge/app.cjs `/page`, ~20 KB after ~5 ms) directly,
 * then the same page as CDN HITs.
 *
 * `benchCdnHit` measures any two URLs (bench/edge.ts passes the environment's URL through the edge);
 * `runCdnBench` starts the app, a Varnish of its own (edge/cdn/varnish.ts) and HAProxy wired as the edge
 * wires them, and measures HITs from Varnish alone and through HAProxy. By itself:
 * `npx tsx bench/edge/cdn.ts [--quick]`.
 */
import { execFile, fork, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Varnish } from '../../edge/cdn/varnish';
import { type CdnHaproxy, startCdnHaproxy } from '../../test/helpers/cdn-haproxy';
import { freePort } from '../../test/helpers/ports';
import { median } from '../harness';
import { sized } from '../quick';

export interface WrkResult {
  requestsPerSecond: number;
  /** Latency percentiles in ms. */
  p50: number;
  p99: number;
  /** Connection errors, timeouts and non-2xx/3xx answers. */
  errors: number;
}

const WRK_HINT = 'apt-get install -y wrk';

function ms(value: string, unit: string): number {
  const scale: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };
  return Math.round(Number(value) * (scale[unit] ?? Number.NaN) * 100) / 100;
}

/** One wrk run (`-t1 -c<connections> --latency`) with the headers given. */
export function wrk(
  url: string,
  headers: Record<string, string>,
  seconds: number,
  connections = 32,
): Promise<WrkResult> {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency'];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    execFile('wrk', args, { encoding: 'utf8' }, (err, out) => {
      if (err) {
        reject((err as NodeJS.ErrnoException).code === 'ENOENT' ? new Error(`the bench needs wrk: ${WRK_HINT}`) : err);
        return;
      }
      const rps = /Requests\/sec:\s+([\d.]+)/.exec(out);
      const p = (q: string) =>
        /^\s+(\d+)%\s+([\d.]+)(us|ms|s|m)\s*$/m.exec(
          out
            .split('\n')
            .filter((l) => l.trim().startsWith(`${q}%`))
            .join('\n'),
        );
      const p50 = p('50');
      const p99 = p('99');
      const errs = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
      const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out);
      if (!rps || !p50 || !p99) {
        reject(new Error(`wrk printed no figures: ${out}`));
        return;
      }
      resolve({
        requestsPerSecond: Number(rps[1]),
        p50: ms(p50[2], p50[3]),
        p99: ms(p99[2], p99[3]),
        errors: (errs ? errs.slice(1).reduce((n, x) => n + Number(x), 0) : 0) + Number(non2xx?.[1] ?? 0),
      });
    });
  });
}

export interface CdnBenchTarget {
  url: string;
  headers?: Record<string, string>;
}

export interface CdnBenchResult {
  app: WrkResult;
  hit: WrkResult;
  /** The median of the rounds' ratios HIT / app. */
  ratio: number;
}

/** The app's page and CDN HITs of it, in alternating rounds (the target: ratio >= 3). */
export async function benchCdnHit(
  app: CdnBenchTarget,
  hit: CdnBenchTarget,
  o: { rounds?: number; seconds?: number } = {},
): Promise<CdnBenchResult> {
  const rounds = o.rounds ?? sized(4, 1);
  const seconds = o.seconds ?? sized(3, 1);
  const runs: Array<[WrkResult, WrkResult]> = [];
  for (let i = 0; i < rounds; i++)
    runs.push([await wrk(app.url, app.headers ?? {}, seconds), await wrk(hit.url, hit.headers ?? {}, seconds)]);
  const mean = (k: 0 | 1): WrkResult => {
    const rs = runs.map((r) => r[k]);
    return {
      requestsPerSecond: rs.reduce((n, r) => n + r.requestsPerSecond, 0) / rs.length,
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      errors: rs.reduce((n, r) => n + r.errors, 0),
    };
  };
  const ratios = runs.map(([a, b]) => b.requestsPerSecond / a.requestsPerSecond);
  return { app: mean(0), hit: mean(1), ratio: median(ratios) };
}

export function printCdnResult(r: CdnBenchResult, hitName = 'CDN HIT'): void {
  const row = (name: string, w: WrkResult) => ({
    case: name,
    'req/s': Math.round(w.requestsPerSecond),
    'p50 ms': w.p50,
    'p99 ms': w.p99,
    errors: w.errors,
  });
  console.log('\nA cacheable page (~20 KB, ~5 ms in the app): the app vs CDN HITs (wrk -t1 -c32)');
  console.table([row("the app's own answer", r.app), row(hitName, r.hit)]);
  console.log(
    `throughput ratio CDN HIT / app (median of rounds) = ${r.ratio.toFixed(2)} (target >= 3): ${r.ratio >= 3 ? 'met' : 'NOT met'}`,
  );
}

/**
 * The app, a Varnish of its own, and HAProxy in front wired as the edge does (test/helpers/cdn-haproxy.ts,
 * without the edge's rules): the app's page, then HITs from Varnish alone, then HITs through HAProxy.
 */
export async function runCdnBench(): Promise<{ varnish: CdnBenchResult; haproxy: CdnBenchResult }> {
  if (spawnSync('sh', ['-c', 'command -v wrk'], { stdio: 'ignore' }).status !== 0)
    throw new Error(`the bench needs wrk: ${WRK_HINT}`);
  const root = mkdtempSync(path.join(tmpdir(), 'vc-bench-cdn-'));
  chmodSync(root, 0o711);
  const app = fork(path.join(import.meta.dirname, 'app.cjs'), [], { stdio: 'inherit' });
  let varnish: Varnish | null = null;
  let haproxy: CdnHaproxy | null = null;
  try {
    const appPort = await new Promise<number>((resolve, reject) => {
      app.once('message', (m: { port: number }) => resolve(m.port));
      app.once('exit', (code) => reject(new Error(`the bench app exited (${code})`)));
    });
    const env = '00000000-0000-4000-8000-00000000beef';
    const [envPort, originPort] = [await freePort(), await freePort()];
    varnish = await Varnish.start({ dir: path.join(root, 'edge', 'varnish'), originPort, storage: '64m' });
    await varnish.resume();
    haproxy = await startCdnHaproxy({
      envs: [{ id: env, port: envPort, appPort, defaultTtl: 600 }],
      cdnPort: varnish.port,
      originPort,
    });
    const headers = { 'X-VC-Env': env, 'X-VC-Default-TTL': '600' };
    const direct: CdnBenchTarget = { url: `http://127.0.0.1:${varnish.port}/page`, headers };
    const through: CdnBenchTarget = { url: `http://127.0.0.1:${envPort}/page` };
    for (const target of [direct, through]) {
      for (let i = 0; i < 2; i++) await fetch(target.url, { headers: target.headers }).then((r) => r.arrayBuffer());
      const check = await fetch(target.url, { headers: target.headers });
      await check.arrayBuffer();
      if (check.headers.get('x-cache') !== 'HIT')
        throw new Error(`${target.url} answered ${check.headers.get('x-cache')}`);
    }
    const appTarget = { url: `http://127.0.0.1:${appPort}/page` };
    console.log('[bench] cdn: the app and CDN HITs from Varnish alone, in turn...');
    const alone = await benchCdnHit(appTarget, direct);
    printCdnResult(alone, 'CDN HIT from Varnish alone');
    console.log('[bench] cdn: the app and CDN HITs through HAProxy and Varnish, in turn...');
    const behind = await benchCdnHit(appTarget, through);
    printCdnResult(behind, 'CDN HIT through HAProxy');
    return { varnish: alone, haproxy: behind };
  } finally {
    await haproxy?.stop();
    await varnish?.close();
    if (app.exitCode === null) {
      const gone = new Promise((r) => app.once('exit', r));
      app.kill('SIGTERM');
      await gone;
    }
    rmSync(root, { recursive: true, force: true });
  }
}

/** For bench/index.ts (`npm run bench -- cdn`). */
export const run = runCdnBench;

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runCdnBench().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
