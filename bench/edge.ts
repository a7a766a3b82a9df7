import { availableParallelism } from 'node:os';
import { haproxyPaths } from '../edge/haproxy/paths';
import { command } from '../edge/haproxy/runtime';
import { masterReloads } from '../edge/haproxy/process';
import { REQUEST_BATCH_LINES } from '../processes/shipper-runtime';
import { median, printTable } from './harness';
import { sized } from './quick';
import { ensureWrk, processCpuMicros, wrk, wrkAtRate, type WrkResult } from './edge/wrk';
import { startBareHaproxy } from './edge/bare';
import { benchCdnHit, printCdnResult } from './edge/cdn';
import { HOSTNAME, handshakes, issueAndAwaitServed, verifiedDomain } from './edge/https';
import { httpFloorNode, udpFloorC, udpFloorNode } from './edge/floors';
import { startEdgeWorld } from './edge/world';
import { ATTACKER_ADDRESS, startSlowloris } from './edge/slowloris';

/**
 * The edge (HAProxy, driven by the edge process) against the app directly, same run, each its own process as
 * in production, loaded by wrk (`-t1 -c32`):
 * 1. a small GET through the edge with every rule on (allowed addresses, blocked addresses and user agents,
 *    a rate limit set high, HSTS, stickiness) and a request-log destination (an http collector on loopback)
 *    against a bare HAProxy and the app directly, in alternating rounds. Targets: at least 0.85x the bare
 *    HAProxy's throughput, p99 added under 2 ms, HAProxy at most 8 µs per request over the bare one, the
 *    request log's shipper at most 3 µs per line. The shipper is measured again with a syslog udp destination,
 *    and each kind of send against its floor (the same sends from a process doing nothing else).
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

/** One case of a run: a URL and the HAProxy that serves it (its CPU counted), none for the app directly. */
type Case = { name: string; url: string; script?: string; haproxyPid?: () => number };
/** The processes whose CPU is counted in every case, besides the case's HAProxy. */
type Pids = { app: number; shipper: number; control: number };

interface CaseResult extends WrkResult {
  /** CPU per request (microseconds, user + system) of wrk, the app, the case's HAProxy, the shipper, the control plane */
  cpu: { wrk: number; app: number; haproxy: number; shipper: number; control: number };
}

/**
 * The cases in turn (ROUNDS rounds of SECONDS each, wrk -t1 -c32): each case's mean req/s, median p50/p99, and the
 * CPU per request of every process over its own runs. The ratio of case b to case a is the median of the rounds.
 */
function alternate(cases: Case[], pids: Pids) {
  const runs: WrkResult[][] = cases.map(() => []);
  const cpu = cases.map(() => ({ wrk: 0, app: 0, haproxy: 0, shipper: 0, control: 0 }));
  for (let i = 0; i < ROUNDS; i++)
    cases.forEach((c, k) => {
      const hp = c.haproxyPid?.() ?? 0;
      const at = () => [pids.app, hp, pids.shipper, pids.control].map((p) => (p ? processCpuMicros(p) : 0));
      const before = at();
      const r = wrk(c.name, c.url, SECONDS, 32, c.script);
      const after = at();
      runs[k].push(r);
      cpu[k].wrk += r.cpuMicros;
      cpu[k].app += after[0] - before[0];
      cpu[k].haproxy += after[1] - before[1];
      cpu[k].shipper += after[2] - before[2];
      cpu[k].control += after[3] - before[3];
    });
  const per = (micros: number, n: number) => Math.round((micros / Math.max(1, n)) * 10) / 10;
  const results: CaseResult[] = cases.map((c, k) => {
    const rs = runs[k];
    const requests = rs.reduce((n, r) => n + r.requests, 0);
    const u = cpu[k];
    return {
      name: c.name,
      requestsPerSecond: rs.reduce((n, r) => n + r.requestsPerSecond, 0) / rs.length,
      requests,
      cpuMicros: u.wrk,
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      errors: rs.reduce((n, r) => n + r.errors, 0),
      cpu: {
        wrk: per(u.wrk, requests),
        app: per(u.app, requests),
        haproxy: per(u.haproxy, requests),
        shipper: per(u.shipper, requests),
        control: per(u.control, requests),
      },
    };
  });
  /** The median of the rounds' ratios of case `b` to case `a` (indexes). */
  const ratio = (a: number, b: number) => {
    const rs = runs[a].map((x, i) => runs[b][i].requestsPerSecond / x.requestsPerSecond);
    console.log(`  ${cases[b].name} / ${cases[a].name}, by round: ${rs.map((r) => r.toFixed(2)).join(', ')}`);
    return median(rs);
  };
  return { results, ratio };
}

/**
 * Where the CPU of one request goes, for each case, and the throughput it allows on this host: the app serves on
 * one core at most (one Node process), so does the shipper, and all the processes share
 * `os.availableParallelism()` cores; so at best min(1 / app, 1 / shipper, cores / all). The ratio of the edge's
 * bound to the bare HAProxy's is the highest the edge could reach here whatever the scheduling, and the table
 * says which part costs what over the bare HAProxy.
 */
function cpuBudget(results: CaseResult[], bare: CaseResult, edge: CaseResult) {
  const cores = availableParallelism();
  const all = (r: CaseResult) => r.cpu.wrk + r.cpu.app + r.cpu.haproxy + r.cpu.shipper + r.cpu.control;
  const bound = (r: CaseResult) =>
    Math.min(1e6 / r.cpu.app, 1e6 / Math.max(r.cpu.shipper, 1e-3), (cores * 1e6) / all(r));
  const round1 = (x: number) => Math.round(x * 10) / 10;
  const parts = ['wrk', 'app', 'haproxy', 'shipper', 'control'] as const;
  const label = {
    wrk: 'wrk (the client)',
    app: 'the app',
    haproxy: 'HAProxy',
    shipper: 'the request log shipper',
    control: "the edge's control plane",
  };
  printTable('CPU per request (microseconds, user + system)', [
    ...parts.map((p) => ({
      process: label[p],
      ...Object.fromEntries(results.map((r) => [r.name, r.cpu[p]])),
      'edge - bare': round1(edge.cpu[p] - bare.cpu[p]),
    })),
    {
      process: 'all',
      ...Object.fromEntries(results.map((r) => [r.name, round1(all(r))])),
      'edge - bare': round1(all(edge) - all(bare)),
    },
  ]);
  console.log(
    `on ${cores} cores these costs allow at most ${Math.round(bound(bare))} req/s through the bare HAProxy and ${Math.round(bound(edge))} through the edge: a ratio of at most ${(bound(edge) / bound(bare)).toFixed(2)}`,
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

export async function run(): Promise<{
  ratio: number;
  cdnRatio: number;
  httpsRatio: number;
  shipper: { http: number; udp: number; udpAboveFloor: number | null };
}> {
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

    const bare = await startBareHaproxy(dataDir, appPort);
    const bareUrl = `http://127.0.0.1:${bare.port}/`;
    const edgeUrl = `http://127.0.0.1:${envPort}/`;
    const pids: Pids = { app: app.pid!, shipper: world.shipper.pid!, control: edge.pid! };
    console.log('[bench] edge: warming up...');
    for (const url of [`http://127.0.0.1:${appPort}/`, bareUrl, edgeUrl]) wrk('warm-up', url, 1);
    await refreshWorker();
    // the shipper's own figure: its CPU from here until the last line of the runs reached the destination
    const settled = async () => {
      let last = -1;
      for (let i = 0, now = await world.shipped(); now !== last && i < 60; i++, now = await world.shipped()) {
        last = now;
        await new Promise((r) => setTimeout(r, 1200));
      }
      return { lines: last, cpu: processCpuMicros(world.shipper.pid!), received: await world.received() };
    };
    const shipperBefore = await settled();
    console.log(
      `[bench] edge: the app directly, a bare HAProxy and the edge, in turn (${ROUNDS} x ${SECONDS} s each, wrk -t1 -c32)...`,
    );
    const run1 = alternate(
      [
        { name: 'app directly', url: `http://127.0.0.1:${appPort}/` },
        { name: 'bare HAProxy', url: bareUrl, haproxyPid: () => bare.pid },
        { name: 'the edge, every rule + log', url: edgeUrl, haproxyPid: () => worker },
      ],
      pids,
    );
    const [direct, plain, through] = run1.results;
    const ratio = run1.ratio(1, 2);
    run1.ratio(0, 1);
    printTable('A small GET: the app directly, through a bare HAProxy, through the edge', [
      row(direct),
      row(plain),
      row(through),
    ]);
    // the lines of the edge's requests reach the project's http collector (a second or more for the last ones)
    const shipperAfter = await settled();
    const lines = shipperAfter.lines - shipperBefore.lines;
    console.log(
      `request log: ${lines} lines reached the project's http collector for ${through.requests} requests through the edge`,
    );
    console.log(
      `throughput ratio edge / bare HAProxy (median of rounds) = ${ratio.toFixed(2)} (target >= 0.85): ${ratio >= 0.85 ? 'met' : 'NOT met'}`,
    );
    const overHaproxy = Math.round((through.cpu.haproxy - plain.cpu.haproxy) * 10) / 10;
    console.log(
      `HAProxy CPU per request: the edge ${through.cpu.haproxy} µs, bare ${plain.cpu.haproxy} µs: ${overHaproxy} µs over (target <= 8): ${overHaproxy <= 8 ? 'met' : 'NOT met'}`,
    );
    const shipper = await shipperCost(world, edgeUrl, dataDir, settled, {
      lines: Math.max(lines, through.requests),
      cpu: shipperAfter.cpu - shipperBefore.cpu,
      bytes: shipperAfter.received.httpBytes - shipperBefore.received.httpBytes,
    });
    console.log(`the edge's control plane CPU per request (it reads no request line): ${through.cpu.control} µs`);
    cpuBudget(run1.results, plain, through);

    // p99 at half the bare HAProxy's saturating rate, the same rate through both, in turn
    const half = Math.round(plain.requestsPerSecond / 2);
    console.log(`[bench] edge: p99 at half the bare HAProxy's saturating rate (~${half} req/s), in turn...`);
    const calm: WrkResult[][] = [[], []];
    for (let i = 0; i < ROUNDS; i++) {
      calm[0].push(wrkAtRate('bare HAProxy at half rate', bareUrl, SECONDS, half, dataDir));
      calm[1].push(wrkAtRate('the edge at half rate', edgeUrl, SECONDS, half, dataDir));
    }
    const med = (rs: WrkResult[], k: 'p50' | 'p99' | 'requestsPerSecond') => median(rs.map((r) => r[k]));
    const calmRows = calm.map((rs) => ({
      ...rs[0],
      requestsPerSecond: med(rs, 'requestsPerSecond'),
      p50: med(rs, 'p50'),
      p99: med(rs, 'p99'),
      errors: rs.reduce((n, r) => n + r.errors, 0),
    }));
    printTable('A small GET at half the saturating rate (median of rounds)', calmRows.map(row));
    const added = Math.round((calmRows[1].p99 - calmRows[0].p99) * 1000) / 1000;
    console.log(`p99 added by the edge at half rate = ${added} ms (target <= 2 ms): ${added <= 2 ? 'met' : 'NOT met'}`);
    await bare.stop();

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
      [
        { name: 'HTTP through the edge, every rule on', url: edgeUrl, haproxyPid: () => worker },
        {
          name: 'HTTPS through the edge (Pebble certificate, SNI)',
          url: https,
          script: acme.loopbackScript,
          haproxyPid: () => worker,
        },
      ],
      pids,
    );
    const [secureA, secureB] = secure.results;
    const httpsRatio = secure.ratio(0, 1);
    printTable('A small GET through the edge: HTTP vs HTTPS', [row(secureA), row(secureB)]);
    console.log(`HAProxy CPU per HTTPS request: ${secureB.cpu.haproxy} microseconds (HTTP: ${secureA.cpu.haproxy})`);
    console.log(
      `throughput ratio HTTPS / HTTP (median of rounds) = ${httpsRatio.toFixed(2)} (target >= 0.6): ${httpsRatio >= 0.6 ? 'met' : 'NOT met'}`,
    );
    const hs = await handshakes(acme.tlsPort, cert.ca, cert.serial, sized(200, 40));
    console.log(
      `new TLS handshake (${hs.count} fresh tls.connect, to secureConnect): p50 ${hs.p50} ms, p99 ${hs.p99} ms`,
    );

    await new Promise((r) => setTimeout(r, 3000));
    console.log(`request log: ${await world.shipped()} lines reached the project's http collector during the bench`);
    const reloads = ((await masterReloads(haproxyPaths(dataDir))) ?? 0) - (reloadsBefore ?? 0);
    console.log(
      `HAProxy reloads during the bench (its master's count; the domain, certificate and CDN changes made): ${reloads}`,
    );
    return { ratio, cdnRatio: cached.ratio, httpsRatio, shipper };
  } finally {
    await world.close();
  }
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/**
 * The request log shipper's CPU per line, by destination, each beside its floor (bench/edge/floors.ts): http
 * (the main run's, `http`: its lines, the shipper's CPU over them, the bytes the collector got), then the edge
 * loaded again (ROUNDS x SECONDS) with the destination a syslog udp receiver, a datagram a line. Target: at most
 * 3 µs a line; a udp datagram alone costs more than that here, so for udp the target is read above its floor.
 */
async function shipperCost(
  world: Awaited<ReturnType<typeof startEdgeWorld>>,
  edgeUrl: string,
  dir: string,
  settled: () => Promise<{ lines: number; cpu: number; received: Awaited<ReturnType<typeof world.received>> }>,
  http: { lines: number; cpu: number; bytes: number },
) {
  const httpPerLine = round2(http.cpu / Math.max(1, http.lines));
  const lineBytes = Math.max(1, Math.round(http.bytes / Math.max(1, http.lines)));
  const httpFloor = httpFloorNode(world.collector.httpPort, http.lines, lineBytes, REQUEST_BATCH_LINES);

  console.log(`[bench] edge: the request log to a syslog udp destination (${ROUNDS} x ${SECONDS} s, wrk -t1 -c32)...`);
  await world.useDestination('udp');
  const before = await settled();
  let requests = 0;
  for (let i = 0; i < ROUNDS; i++) requests += wrk('the edge, log to syslog udp', edgeUrl, SECONDS).requests;
  const after = await settled();
  await world.useDestination('http');
  const datagrams = after.received.udp - before.received.udp;
  const lines = Math.max(after.lines - before.lines, requests);
  const udpPerLine = round2((after.cpu - before.cpu) / Math.max(1, lines));
  const bytes = Math.max(1, Math.round((after.received.udpBytes - before.received.udpBytes) / Math.max(1, datagrams)));
  const nodeFloor = udpFloorNode(world.collector.udpPort, lines, bytes);
  const cFloor = udpFloorC(dir, world.collector.udpPort, lines, bytes);
  const above = nodeFloor === null ? null : round2(udpPerLine - nodeFloor);
  const httpAbove = httpFloor === null ? null : round2(httpPerLine - httpFloor);
  const verdict = (x: number | null) => (x === null ? '' : x <= 3 ? 'met' : 'NOT met');
  printTable('The request log shipper: CPU per line by destination, against the sends alone (µs)', [
    {
      destination: `http, NDJSON batches of <= ${REQUEST_BATCH_LINES} (${http.lines} lines, ~${lineBytes} bytes each)`,
      'shipper µs/line': httpPerLine,
      'floor: the sends alone':
        httpFloor === null ? 'n/a' : `${httpFloor} (Node http.request, one kept-alive connection)`,
      'shipper above the floor': httpAbove ?? 'n/a',
      'target <= 3 µs/line': verdict(httpPerLine),
    },
    {
      destination: `syslog udp, a datagram a line (${lines} lines, ${datagrams} received, ~${bytes} bytes each)`,
      'shipper µs/line': udpPerLine,
      'floor: the sends alone': `${nodeFloor ?? 'n/a'} (Node dgram), ${cFloor ?? 'n/a'} (C send())`,
      'shipper above the floor': above ?? 'n/a',
      'target <= 3 µs/line': `${verdict(udpPerLine)}; above the Node floor: ${verdict(above)}`,
    },
  ]);
  return { http: httpPerLine, udp: udpPerLine, udpAboveFloor: above };
}
