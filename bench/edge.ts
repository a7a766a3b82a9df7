import { availableParallelism } from 'node:os';
import { haproxyPaths } from '../edge/haproxy/paths';
import { command } from '../edge/haproxy/runtime';
import { masterReloads } from '../edge/haproxy/process';
import { printTable } from './harness';
import { sized } from './quick';
import { ensureWrk, processCpuMicros, wrk, type WrkResult } from './edge/wrk';
import { benchCdnHit, printCdnResult } from './edge/cdn';
import { HOSTNAME, handshakes, issueAndAwaitServed, verifiedDomain } from './edge/https';
import { startEdgeWorld } from './edge/world';
import { ATTACKER_ADDRESS, startSlowloris } from './edge/slowloris';

/**
 * The edge (HAProxy, driven by the edge process) against the app directly, same run, each its own process as
 * in production, loaded by wrk (`-t1 -c32`):
 * 1. a small GET through the edge with every rule on (allowed addresses, blocked addresses and user agents,
 *    a rate limit set high, HSTS, stickiness) and a request-log destination (syslog on loopback) against the app directly, in alternating rounds. Targets: at
 *    least 0.85x the direct throughput, p99 added under 2 ms; HAProxy's CPU time per request printed.
 * 2. CDN HITs through the edge (HAProxy, Varnish behind it) against the app's own answers (target: at least 3x).
 * 1b. The same GET from 127.0.0.1 while a slowloris from 127.0.0.5 holds what the per-address limit lets it
 *    (EDGE_CONNECTIONS_PER_ADDRESS, 100): the other address's p99 and errors.
 * 3. HTTPS through the edge (a certificate issued by Pebble, served by SNI on EDGE_TLS_PORT) against plain HTTP
 *    through the edge, keep-alive, in alternating rounds (target: at least 0.6x); a new TLS handshake's p50.
 * The edge needs only PostgreSQL (no Temporal, no worker), so this bench starts just a database (and, for
 * HTTPS, Pebble and a DNS server: bench/edge/https.ts).
 */
const ROUNDS = sized(4, 1);
const SECONDS = sized(5, 1);
/** Half-sent requests of the slowloris, held open (opened again once closed). */
const SLOWLORIS = sized(2000, 400);

/**
 * Two cases in alternation (ROUNDS rounds): the mean of each, the median ratio b / a, HAProxy's CPU per request
 * of b, and the edge control plane's (`controlPid`: its request-log reader and shipper) over the same time; and
 * the CPU per request of wrk and of the app (`appPid`) in each case, for the budget that bounds the ratio.
 */
type Case = { name: string; url: string; script?: string };
function alternate(a: Case, b: Case, cpuPid: () => number, controlPid: number, appPid: number) {
  const runs: Array<[WrkResult, WrkResult]> = [];
  let cpu = 0;
  let control = 0;
  let requests = 0;
  const app = [0, 0];
  for (let i = 0; i < ROUNDS; i++) {
    const appBefore = processCpuMicros(appPid);
    const x = wrk(a.name, a.url, SECONDS, 32, a.script);
    const pid = cpuPid();
    const before = processCpuMicros(pid);
    const controlBefore = processCpuMicros(controlPid);
    const appBetween = processCpuMicros(appPid);
    const y = wrk(b.name, b.url, SECONDS, 32, b.script);
    cpu += processCpuMicros(pid) - before;
    control += processCpuMicros(controlPid) - controlBefore;
    app[0] += appBetween - appBefore;
    app[1] += processCpuMicros(appPid) - appBetween;
    requests += y.requests;
    runs.push([x, y]);
  }
  const mean = (k: 0 | 1, name: string): WrkResult => {
    const rs = runs.map((r) => r[k]);
    const median = (xs: number[]) => [...xs].sort((p, q) => p - q)[Math.floor(xs.length / 2)];
    return {
      name,
      requestsPerSecond: rs.reduce((n, r) => n + r.requestsPerSecond, 0) / rs.length,
      requests: rs.reduce((n, r) => n + r.requests, 0),
      cpuMicros: rs.reduce((n, r) => n + r.cpuMicros, 0),
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      errors: rs.reduce((n, r) => n + r.errors, 0),
    };
  };
  const ratios = runs.map(([x, y]) => y.requestsPerSecond / x.requestsPerSecond).sort((p, q) => p - q);
  console.log(
    `  ratios by round: ${runs.map(([x, y]) => (y.requestsPerSecond / x.requestsPerSecond).toFixed(2)).join(', ')}`,
  );
  const per = (micros: number, n: number) => Math.round((micros / Math.max(1, n)) * 10) / 10;
  const ma = mean(0, a.name);
  const mb = mean(1, b.name);
  return {
    a: ma,
    b: mb,
    ratio: ratios[Math.floor(ratios.length / 2)],
    cpuPerRequest: per(cpu, requests),
    controlCpuPerRequest: per(control, requests),
    appCpuPerRequest: [per(app[0], ma.requests), per(app[1], mb.requests)] as const,
    wrkCpuPerRequest: [per(ma.cpuMicros, ma.requests), per(mb.cpuMicros, mb.requests)] as const,
  };
}

/**
 * Where the CPU of one request goes, directly and through the edge, and the ratio it allows on this host: the
 * app serves on one core at most (one Node process), and all the processes share `os.availableParallelism()`
 * cores; so at best direct = min(1 / app, cores / all) and through the edge the same with HAProxy's and the
 * control plane's time added (HAProxy runs a thread per core, the control plane one).
 */
function cpuBudget(small: ReturnType<typeof alternate>) {
  const cores = availableParallelism();
  const [appA, appB] = small.appCpuPerRequest;
  const [wrkA, wrkB] = small.wrkCpuPerRequest;
  const edge = small.cpuPerRequest + small.controlCpuPerRequest;
  const direct = Math.min(1e6 / appA, (cores * 1e6) / (appA + wrkA));
  const through = Math.min(
    1e6 / appB,
    1e6 / Math.max(small.controlCpuPerRequest, 1e-3),
    (cores * 1e6) / (appB + wrkB + edge),
  );
  printTable('CPU per request (microseconds, user + system)', [
    { process: 'wrk (the client)', direct: wrkA, 'through the edge': wrkB },
    { process: 'the app', direct: appA, 'through the edge': appB },
    { process: 'HAProxy', direct: 0, 'through the edge': small.cpuPerRequest },
    { process: 'the control plane (request log)', direct: 0, 'through the edge': small.controlCpuPerRequest },
    {
      process: 'all',
      direct: Math.round((appA + wrkA) * 10) / 10,
      'through the edge': Math.round((appB + wrkB + edge) * 10) / 10,
    },
  ]);
  console.log(
    `on ${cores} cores these costs allow at most ${Math.round(direct)} req/s directly and ${Math.round(through)} through the edge: a ratio of at most ${(through / direct).toFixed(2)}`,
  );
}

function row(r: WrkResult) {
  return {
    case: r.name,
    'req/s': Math.round(r.requestsPerSecond),
    'p50 ms': r.p50,
    'p99 ms': r.p99,
    errors: r.errors,
  };
}

export async function run(): Promise<{ ratio: number; cdnRatio: number; httpsRatio: number }> {
  ensureWrk();
  console.log('[bench] edge: starting a database, an app and the edge (HAProxy and its control plane)...');
  const world = await startEdgeWorld('edge', { acme: true });
  const { knex, dataDir, secrets, app, appPort, envPort, cdnPort, edge } = world;
  const acme = world.acme!;
  const { teamId, projectId, environmentId } = world.ids;
  try {
    const admin = haproxyPaths(dataDir).admin;
    let worker = 0;
    const refreshWorker = async () => {
      worker = Number(/^Pid: (\d+)/m.exec(await command(admin, 'show info'))?.[1]);
    };
    await refreshWorker();

    const check = await fetch(`http://127.0.0.1:${envPort}/`);
    if (check.status !== 200) throw new Error(`the edge answered ${check.status}`);
    // HAProxy's master counts its reloads: none is expected during the run (only pages and an upgrade reload)
    const reloadsBefore = await masterReloads(haproxyPaths(dataDir));

    console.log('[bench] edge: warming up...');
    wrk('warm-up', `http://127.0.0.1:${appPort}/`, 1);
    wrk('warm-up', `http://127.0.0.1:${envPort}/`, 1);
    await refreshWorker();
    console.log(
      `[bench] edge: the app directly and through the edge, in turn (${ROUNDS} x ${SECONDS} s each, wrk -t1 -c32)...`,
    );
    const small = alternate(
      { name: 'app directly', url: `http://127.0.0.1:${appPort}/` },
      { name: 'through the edge (HAProxy), every rule on', url: `http://127.0.0.1:${envPort}/` },
      () => worker,
      edge.pid!,
      app.pid!,
    );
    const { a: direct, b: through, ratio } = small;
    printTable('A small GET: the app directly vs through the edge', [row(direct), row(through)]);
    const added = Math.round((through.p99 - direct.p99) * 1000) / 1000;
    console.log(`HAProxy CPU per request: ${small.cpuPerRequest} microseconds`);
    console.log(
      `edge control plane CPU per request (its request-log reader and shipper, same time): ${small.controlCpuPerRequest} microseconds`,
    );
    console.log(
      `throughput ratio edge / direct (median of rounds) = ${ratio.toFixed(2)} (target >= 0.85): ${ratio >= 0.85 ? 'met' : 'NOT met'}`,
    );
    console.log(`p99 added by the edge = ${added} ms (target < 2 ms): ${added < 2 ? 'met' : 'NOT met'}`);
    cpuBudget(small);

    // A slowloris from 127.0.0.5 (EDGE_CONNECTIONS_PER_ADDRESS at its default, 100) while wrk asks from 127.0.0.1
    const attack = startSlowloris(envPort, SLOWLORIS);
    await new Promise((r) => setTimeout(r, 1000));
    console.log(
      `[bench] edge: a slowloris of ${SLOWLORIS} half-sent requests from ${ATTACKER_ADDRESS} (${attack.open()} held, the rest closed and opened again), wrk from 127.0.0.1 (${SECONDS} s, -c32)...`,
    );
    const underAttack = wrk(
      'through the edge under a slowloris from another address',
      `http://127.0.0.1:${envPort}/`,
      SECONDS,
    );
    const closedByEdge = attack.closed();
    attack.stop();
    printTable('A small GET through the edge: alone vs under a slowloris from another address', [
      row(through),
      row(underAttack),
    ]);
    console.log(
      `other address under slowloris: p99 ${underAttack.p99} ms (alone ${through.p99} ms), ${underAttack.errors} errors; the edge closed ${closedByEdge} of the attacker's connections`,
    );

    for (let i = 0; i < 2; i++) await fetch(`http://127.0.0.1:${cdnPort}/page`).then((r) => r.arrayBuffer());
    const hit = await fetch(`http://127.0.0.1:${cdnPort}/page`);
    await hit.arrayBuffer();
    if (hit.headers.get('x-cache') !== 'HIT')
      throw new Error(`the edge's CDN answered ${hit.headers.get('x-cache')} where a HIT was expected`);
    console.log(`[bench] edge: a cacheable page from the app and CDN HITs through the edge, in turn...`);
    const cached = await benchCdnHit(
      { url: `http://127.0.0.1:${appPort}/page` },
      { url: `http://127.0.0.1:${cdnPort}/page` },
    );
    printCdnResult(cached, 'CDN HIT through the edge (HAProxy + Varnish), every rule on');

    console.log(`[bench] edge: a certificate for ${HOSTNAME} from Pebble (HTTP-01 answered by the edge)...`);
    const domainId = await verifiedDomain(knex, { teamId, projectId, environmentId });
    const cert = await issueAndAwaitServed(acme, { knex, secrets, domainId });
    console.log(`  issued by ${cert.issuer} and served by SNI ${cert.seconds.toFixed(1)} s after the order`);
    const https = `https://${HOSTNAME}:${acme.tlsPort}/`;
    wrk('warm-up', https, 1, 32, acme.loopbackScript);
    await refreshWorker();
    console.log(`[bench] edge: plain HTTP and HTTPS through the edge, in turn (keep-alive, wrk -t1 -c32)...`);
    const secure = alternate(
      { name: 'HTTP through the edge, every rule on', url: `http://127.0.0.1:${envPort}/` },
      { name: 'HTTPS through the edge (Pebble certificate, SNI)', url: https, script: acme.loopbackScript },
      () => worker,
      edge.pid!,
      app.pid!,
    );
    printTable('A small GET through the edge: HTTP vs HTTPS', [row(secure.a), row(secure.b)]);
    console.log(`HAProxy CPU per HTTPS request: ${secure.cpuPerRequest} microseconds`);
    console.log(
      `throughput ratio HTTPS / HTTP (median of rounds) = ${secure.ratio.toFixed(2)} (target >= 0.6): ${secure.ratio >= 0.6 ? 'met' : 'NOT met'}`,
    );
    const hs = await handshakes(acme.tlsPort, cert.ca, cert.serial, sized(200, 40));
    console.log(
      `new TLS handshake (${hs.count} fresh tls.connect, to secureConnect): p50 ${hs.p50} ms, p99 ${hs.p99} ms`,
    );

    await new Promise((r) => setTimeout(r, 3000));
    console.log(`request log: ${world.shipped()} lines reached the project's syslog destination during the bench`);
    const reloads = ((await masterReloads(haproxyPaths(dataDir))) ?? 0) - (reloadsBefore ?? 0);
    console.log(
      `HAProxy reloads during the bench (its master's count; the domain, certificate and CDN changes made): ${reloads}`,
    );
    return { ratio, cdnRatio: cached.ratio, httpsRatio: secure.ratio };
  } finally {
    await world.close();
  }
}
