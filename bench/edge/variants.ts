/**
 * Where HAProxy's CPU per request goes (`npm run bench -- edge-variants`): the haproxy.cfg the edge generates
 * for bench/edge.ts's world (bench/edge/world.ts: every rule on, the request log shipped), started as is and
 * with one feature at a time taken out, against bench/edge/app.cjs, each loaded with wrk -t1 -c32, variants
 * in alternating rounds. The edge's control plane writes the configuration and is stopped (HAProxy with it;
 * the files stay) before the variants run, each an HAProxy of its own on the same ports. The request log's
 * ring goes to a RequestLogReader (edge/request-log/reader.ts) in a child process of its own
 * (bench/edge/variants-reader.ts), whose CPU per line is printed too.
 *
 *   npm run bench -- edge-variants [--variants=<regexp of their names>] [--rounds=3] [--seconds=3]
 *
 * `--quick` (bench/quick.ts): two variants, one round of 1 s each. Figures: docs/benchmarks.md "The edge".
 */
import { type ChildProcess, fork, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { HAPROXY_BIN } from '../../edge/haproxy/process';
import { QUICK, sized } from '../quick';
import { ensureWrk, processCpuMicros, wrk } from './wrk';
import { startEdgeWorld } from './world';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

type Edit = (cfg: string) => string;
const drop =
  (...patterns: RegExp[]): Edit =>
  (cfg) =>
    cfg
      .split('\n')
      .filter((l) => !patterns.some((p) => p.test(l)))
      .join('\n');
const set =
  (line: string): Edit =>
  (cfg) =>
    cfg.replace(/^global\n/, `global\n  ${line}\n`);
/** HAProxy's threads: `n`, or its own default (one per core) when 0. */
const threads =
  (n: number): Edit =>
  (cfg) => {
    const without = drop(/^\s+nbthread /)(cfg);
    return n ? set(`nbthread ${n}`)(without) : without;
  };
const bufsize =
  (n: number): Edit =>
  (cfg) =>
    cfg.replace(/tune\.bufsize \d+/, `tune.bufsize ${n}`);
const all =
  (...edits: Edit[]): Edit =>
  (cfg) =>
    edits.reduce((c, e) => e(c), cfg);

const noLog = drop(/^\s+log ring@/);
const noLogRules = drop(/^\s+log ring@/, /^\s+log-format/, /set-var\(txn\.vc_log_/, /table vc_log_seq/);
const noRetry = drop(/^\s+retry-on /);
const SEQ = '%[sc2_inc_gpc0]';
/** The request log line without its sequence number (the stick table's counter, edge/request-log/haproxy.ts). */
const noSeq: Edit = (cfg) => drop(/table vc_log_seq/)(cfg).replace(SEQ, '0');
/**
 * The sequence number as it was before the stick table: a Lua converter given the environment, loaded per thread
 * (each thread counting its own), CONVERTER_LUA written beside the request log's files.
 */
const luaSeq: Edit = (cfg) =>
  drop(/table vc_log_seq/)(cfg)
    .replace(SEQ, '%[var(txn.env),lua.vc_log_seq]')
    .replace(/^global\n/, `global\n  lua-load-per-thread ${CONVERTER_FILE}\n`);
let CONVERTER_FILE = '';
const CONVERTER_LUA = `local seq = {}
core.register_converters("vc_log_seq", function(env)
  local n = (seq[env] or 0) + 1
  seq[env] = n
  return n
end)
`;
/** The request log line without its five json(utf8s) conversions (the strings as they are: measure only). */
const noJson: Edit = (cfg) => cfg.replaceAll(',json(utf8s)]', ']');
const noRate = drop(/txn\.(rl|now)/, /track-sc0/, /sc-(set-gpt|inc-gpc)/);
const noLists = drop(/http-request deny deny_status 403/, /set-var\(txn\.(bn|ua|al|an)\)/);
const noPassword = drop(/vc_pw_/);
const noCookie = drop(/^\s+cookie vc_instance/);
const noForwardfor = drop(/option forwardfor/, /X-Forwarded-(Proto|Host)/);
const noChecks = drop(/^\s+default-server check/);

const VARIANTS: Record<string, Edit> = {
  'as generated': (c) => c,
  'no request log line (log ring@)': noLog,
  'no request log at all (ring, seq table, set-vars)': noLogRules,
  'no sequence number in the line': noSeq,
  'Lua sequence per thread (before the stick table)': luaSeq,
  'no json() conversions in the line': noJson,
  // the ring's forwarder sends a line as it comes while its socket has room: a small send buffer makes the lines
  // written while the shipper rests wait in the ring, then go in one write
  'tune.sndbuf.server 16384 (the ring forwarder writes in batches)': set('tune.sndbuf.server 16384'),
  'no retry-on': noRetry,
  'tune.bufsize 131072 (the edge before bufsizeFor)': bufsize(131072),
  'tune.bufsize 131072, no retry-on': all(bufsize(131072), noRetry),
  'tune.bufsize 65536': bufsize(65536),
  'tune.bufsize 32768 (the edge before buffer.ts)': bufsize(32768),
  'no rate limit (track-sc0, 429)': noRate,
  'no address/agent lists (their 3 deny rules and 4 lookups)': noLists,
  'no password rules': noPassword,
  'no vc_instance cookie': noCookie,
  'no forwardfor, X-Forwarded-*': noForwardfor,
  'no health checks': noChecks,
  'nbthread 1': threads(1),
  "one thread per core (HAProxy's default)": threads(0),
  'all of the above out (nbthread 1)': all(
    noLogRules,
    noRetry,
    noRate,
    noLists,
    noPassword,
    noCookie,
    noForwardfor,
    noChecks,
    threads(1),
  ),
};

function start(child: ChildProcess): Promise<{ port?: number }> {
  return new Promise((resolve, reject) => {
    child.once('message', (m: { port?: number }) => resolve(m));
    child.once('exit', (code) => reject(new Error(`exited (${code})`)));
  });
}

const option = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

/** The quick run's two: the configuration as generated, and without its request log line. */
const QUICK_VARIANTS = ['as generated', 'no request log line (log ring@)'];

export async function run(): Promise<void> {
  ensureWrk();
  const rounds = Number(option('rounds') ?? sized(3, 1));
  const seconds = Number(option('seconds') ?? sized(3, 1));
  const only = option('variants');
  const names = Object.keys(VARIANTS).filter((n) =>
    only ? new RegExp(only).test(n) : !QUICK || QUICK_VARIANTS.includes(n),
  );
  if (names[0] !== 'as generated') names.unshift('as generated'); // the differences are to it
  console.log('[bench] edge-variants: starting a database, an app and the edge (to generate its haproxy.cfg)...');
  const world = await startEdgeWorld('edge_variants', { acme: false });
  const children: ChildProcess[] = [];
  try {
    await world.stopEdge(); // HAProxy stops with it; its configuration, maps, pages and password key stay
    console.log(
      `[bench] edge-variants: ${names.length} variants of its haproxy.cfg, in turn (${rounds} x ${seconds} s each, wrk -t1 -c32)...`,
    );
    await measure(world.dataDir, world.appPort, world.envPort, children, rounds, seconds, names);
  } finally {
    for (const c of children) {
      if (c.exitCode !== null || c.signalCode !== null) continue;
      const gone = new Promise((r) => c.once('exit', r));
      c.kill('SIGTERM');
      await gone;
    }
    await world.close();
  }
}

async function measure(
  dir: string,
  appPort: number,
  port: number,
  children: ChildProcess[],
  rounds: number,
  seconds: number,
  names: string[],
) {
  const scratch = join(dir, 'variants');
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  CONVERTER_FILE = join(dir, 'edge/request-log/sequence-converter.lua');
  writeFileSync(CONVERTER_FILE, CONVERTER_LUA);
  const socket = join(dir, 'edge/request-log/reader.sock');
  rmSync(socket, { force: true });
  const reader = fork(join(import.meta.dirname, 'variants-reader.ts'), [socket], {
    stdio: 'inherit',
    execArgv: ['--import', 'tsx'],
  });
  children.push(reader);
  await start(reader);
  const readerLines = () =>
    new Promise<number>((resolve) => {
      reader.once('message', (m: { lines: number }) => resolve(m.lines));
      reader.send('lines');
    });

  const base = readFileSync(join(dir, 'edge/haproxy/haproxy.cfg'), 'utf8');
  const url = `http://127.0.0.1:${port}/`;
  const results = new Map<string, { rps: number[]; cpu: number; reqs: number; readerCpu: number; lines: number }>();
  for (const name of names) {
    const file = join(scratch, `${names.indexOf(name)}.cfg`);
    writeFileSync(file, VARIANTS[name](base));
    const c = spawnSync(HAPROXY_BIN, ['-c', '-q', '-f', file, '-f', join(dir, 'edge/auth/password-key.cfg')]);
    if (c.status !== 0) throw new Error(`${name}: ${c.stderr}`);
  }
  const direct: number[] = [];
  for (let r = 0; r < rounds; r++) {
    direct.push(wrk('direct', `http://127.0.0.1:${appPort}/`, seconds).requestsPerSecond);
    // each round starts one variant further on: the variant that follows the app's own run (its heap, the cores'
    // caches) is a different one each round, not always the first (which "as generated" was, in every round)
    const order = names.map((_, i) => names[(i + r) % names.length]);
    for (const name of order) {
      const file = join(scratch, `${names.indexOf(name)}.cfg`);
      const haproxy = spawn(HAPROXY_BIN, ['-db', '-f', file, '-f', join(dir, 'edge/auth/password-key.cfg')], {
        stdio: ['ignore', 'ignore', 'ignore'],
      });
      children.push(haproxy);
      // listening (a loaded machine may take more than a moment)
      for (let i = 0; i < 100 && !(await listening(port)); i++) await pause(100);
      wrk('warm-up', url, 1);
      await pause(200);
      const before = processCpuMicros(haproxy.pid!);
      const readerBefore = processCpuMicros(reader.pid!);
      const linesBefore = await readerLines();
      const y = wrk(name, url, seconds);
      await pause(300); // the ring's last lines reach the reader
      const cpu = processCpuMicros(haproxy.pid!) - before;
      const readerCpu = processCpuMicros(reader.pid!) - readerBefore;
      const lines = (await readerLines()) - linesBefore;
      const gone = new Promise((res) => haproxy.once('exit', res));
      haproxy.kill('SIGTERM');
      await gone;
      if (y.errors) console.log(`  ${name}: ${y.errors} errors`);
      const e = results.get(name) ?? { rps: [], cpu: 0, reqs: 0, readerCpu: 0, lines: 0 };
      e.rps.push(y.requestsPerSecond);
      e.cpu += cpu;
      e.reqs += y.requests;
      e.readerCpu += readerCpu;
      e.lines += lines;
      results.set(name, e);
      console.log(
        `  round ${r + 1} ${name}: ${Math.round(y.requestsPerSecond)} req/s, ${(cpu / y.requests).toFixed(1)} µs`,
      );
    }
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const baseCpu = results.get(names[0])!;
  console.log(`\napp directly: ${Math.round(mean(direct))} req/s (mean of ${rounds} rounds)`);
  // lines / requests: below 1, the variant lost lines (its ring overwritten before the reader took them), and its
  // HAProxy's figure counts less work than the edge's
  console.log('| variant | req/s | HAProxy µs/req | vs as generated | reader µs/line | lines / requests |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const name of names) {
    const e = results.get(name)!;
    const us = e.cpu / e.reqs;
    const d = us - baseCpu.cpu / baseCpu.reqs;
    console.log(
      `| ${name} | ${Math.round(mean(e.rps))} | ${us.toFixed(1)} | ${name === names[0] ? '' : d.toFixed(1)} | ${e.lines ? (e.readerCpu / e.lines).toFixed(1) : '-'} | ${e.lines ? (e.lines / e.reqs).toFixed(3) : '-'} |`,
    );
  }
}
