/**
 * `npm run bench -- shipper`: the request log shipper's CPU per line on its own (issue 28 item 5: at most 3 µs),
 * without HAProxy or wrk sharing the cores, so that a change to it shows in seconds rather than in the edge bench's
 * minutes (whose figure also counts what HAProxy's ring and the load take from it).
 *
 * - **The shipper as npm start runs it** (processes/shipper.ts, its own process, bench/edge/world.ts), fed on its
 *   unix socket by a writer process at `BENCH_SHIPPER_RATE` lines a second (30,000: about the edge's saturating rate
 *   here), in writes of 10 ms of lines, as HAProxy's ring forwards them: lines of wrk's requests (`GET /`, no
 *   User-Agent), to an http collector (NDJSON batches, its own process). Its CPU from the first line until the last
 *   arrived, over the lines, after a warm-up (its lazy loads and first compiles are not the figure).
 * - **Beside it, its floors**: the same lines POSTed in the same batches by a Node process doing nothing else
 *   (bench/edge/floors.cjs), and the same bytes appended to a file on the same disk, a second of lines a write (the
 *   machine's day file, which the shipper writes at each flush).
 * - **The reader alone** (logs/request-reader.ts), in this process: its socket reads' text handed to it, the lines
 *   counted; the part of the figure that is per line, not per send.
 */
import { fork } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type net from 'node:net';
import { requestLogPaths } from '../../edge/request-log/control';
import { RequestLogReader } from '../../logs/request-reader';
import { REQUEST_BATCH_LINES } from '../../processes/shipper-runtime';
import { printTable } from '../harness';
import { sized } from '../quick';
import { fileFloorNode, httpFloorNode, udpFloorNode } from './floors';
import { startEdgeWorld } from './world';
import { processCpuMicros } from './wrk';

const RATE = Number(process.env.BENCH_SHIPPER_RATE ?? 30_000);
/** `BENCH_SHIPPER_DESTINATION=udp`: the project's destination a syslog udp receiver (a datagram a line), not http. */
const DESTINATION: 'http' | 'udp' = process.env.BENCH_SHIPPER_DESTINATION === 'udp' ? 'udp' : 'http';
const TARGET_US = 3;

/** HAProxy's line for a request of wrk (bench/edge.ts's load): `GET /`, no User-Agent. */
const line = (q: number, epoch: string, envId: string, ms: number) =>
  `${q} ${epoch} ${Math.floor(ms / 1000)}.${String(ms % 1000).padStart(3, '0')} 0 {"environment_id":"${envId}","type":"request","method":"GET","path":"\\/","status":200,"bytes":193,"duration_ms":0,"client_address":"127.0.0.1","user_agent":"-"}\n`;

/** The writer: its own process, so that its CPU is not the shipper's (argv: socket, env, lines, rate). */
const WRITER = `const net = require('node:net');
const [sock, env, lines, rate] = process.argv.slice(2);
const line = ${line.toString()};
const n = Number(lines), per = Math.max(1, Math.round(Number(rate) / 100));
const s = net.connect(sock, async () => {
  const epoch = 'w' + process.pid;
  for (let q = 0; q < n; ) {
    const t0 = Date.now();
    let out = '';
    for (let i = 0; i < per && q < n; i++) out += line(++q, epoch, env, Date.now());
    if (!s.write(out)) await new Promise((r) => s.once('drain', r));
    const wait = 10 - (Date.now() - t0);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  s.end(() => process.exit(0));
});
`;

/** The reader alone: µs of this process's CPU a line, the reads' text made before. */
async function readerAlone(lines: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'vc-bench-reader-'));
  let got = 0;
  const reader = await new RequestLogReader({
    cursorFile: join(dir, 'cursor.json'),
    sink: { pushBlock: (_env, _block, n) => void (got += n), countDropped: () => undefined },
  }).start();
  // a socket as the reader uses one: text in 'data' (setEncoding), pause and resume
  const socket = Object.assign(new EventEmitter(), {
    setEncoding: () => socket,
    pause: () => socket,
    resume: () => socket,
    destroy: () => socket,
  });
  reader.adopt(socket as unknown as net.Socket);
  const envId = '0b7c9a52-3f6e-4c1a-9d7e-2a4b6c8d0e1f';
  const per = 300; // a 10 ms write at the rate: ~64 KiB
  const now = Date.now();
  let q = 0;
  const reads = (n: number) =>
    Array.from({ length: Math.ceil(n / per) }, () => {
      let text = '';
      for (let i = 0; i < per; i++) text += line(++q, 'w1', envId, now);
      return Buffer.from(text);
    });
  // a read's text is new each time (decoded from the socket's bytes, as setEncoding does), never kept
  for (const b of reads(Math.min(lines, 60_000))) socket.emit('data', b.toString('utf8'));
  const measured = reads(lines);
  got = 0;
  const before = process.cpuUsage();
  for (const b of measured) socket.emit('data', b.toString('utf8'));
  const used = process.cpuUsage(before);
  await reader.close();
  rmSync(dir, { recursive: true, force: true });
  return (used.user + used.system) / Math.max(1, got);
}

export async function run(): Promise<{ perLine: number }> {
  const lines = sized(600_000, 30_000);
  console.log(
    `[bench] shipper: ${lines} request lines at ${RATE}/s into the shipper's socket, ${DESTINATION === 'udp' ? 'a syslog udp' : 'an http'} destination...`,
  );
  const world = await startEdgeWorld('shipper', { acme: false });
  try {
    if (DESTINATION === 'udp') await world.useDestination('udp');
    const sentBytes = async () => {
      const r = await world.received();
      return DESTINATION === 'udp' ? r.udpBytes : r.httpBytes;
    };
    const writer = join(world.dataDir, 'writer.cjs');
    writeFileSync(writer, WRITER);
    const socket = requestLogPaths(world.dataDir).socket;
    const feed = async (n: number) => {
      const before = await world.shipped();
      const w = fork(writer, [socket, world.ids.environmentId, String(n), String(RATE)]);
      await new Promise((r) => w.once('exit', r));
      const wrote = Date.now();
      for (;;) {
        const got = (await world.shipped()) - before;
        if (got >= n) return;
        if (Date.now() - wrote > 30_000) throw new Error(`only ${got} of ${n} lines reached the collector`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    await feed(Math.min(RATE, lines));
    await new Promise((r) => setTimeout(r, sized(10_000, 2000)));
    const cpu0 = processCpuMicros(world.shipper.pid!);
    const bytes0 = await sentBytes();
    await feed(lines);
    const perLine = (processCpuMicros(world.shipper.pid!) - cpu0) / lines;
    const bytes = (await sentBytes()) - bytes0;
    const floor =
      DESTINATION === 'udp'
        ? udpFloorNode(world.collector.udpPort, lines, Math.round(bytes / lines))
        : httpFloorNode(world.collector.httpPort, lines, Math.round(bytes / lines), REQUEST_BATCH_LINES);
    // the machine's day file: the same bytes written on the same disk, a second of lines a write (a flush)
    const fileFloor = fileFloorNode(join(world.dataDir, 'floor.ndjson'), lines, Math.round(bytes / lines), RATE);
    const reader = await readerAlone(lines);
    const f = (x: number | null) => (x === null ? '-' : Number(x.toFixed(2)));
    printTable(`The request log shipper alone, CPU µs a line (${lines} lines at ${RATE}/s; target ${TARGET_US})`, [
      { part: `the shipper (its process: read, machine file, ${DESTINATION} sends)`, 'µs a line': f(perLine) },
      {
        part:
          DESTINATION === 'udp'
            ? "floor: as many datagrams of the same size sent by Node's dgram in a process doing nothing else"
            : 'floor: the same batches POSTed by a process doing nothing else',
        'µs a line': f(floor),
      },
      {
        part: 'floor: the same bytes appended to a file on its disk, a second of lines a write',
        'µs a line': f(fileFloor),
      },
      {
        part: 'the shipper above both floors (its sends and its machine file)',
        'µs a line': f(floor === null || fileFloor === null ? null : perLine - floor - fileFloor),
      },
      { part: 'the reader alone (in this process)', 'µs a line': f(reader) },
    ]);
    console.log(
      `[bench] shipper: ${f(perLine)} µs a line against the target of ${TARGET_US}: ${perLine <= TARGET_US ? 'met' : 'not met'}`,
    );
    return { perLine };
  } finally {
    await world.close();
  }
}
