/**
 * What the request log shipper's sends cost at least here (bench/edge.ts): the same number of datagrams of the
 * same size, or the same lines in the same batches, sent by a process that does nothing else
 * (bench/edge/floors.cjs from Node, bench/edge/udp-floor.c from C when gcc is here), against the bench's
 * collector. Each returns CPU microseconds per line (per datagram), or null when it could not run.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const per = (out: string, n: number) => Math.round((Number(out.trim()) / Math.max(1, n)) * 100) / 100;

function node(args: Array<string | number>): string | null {
  try {
    return execFileSync(process.execPath, [join(import.meta.dirname, 'floors.cjs'), ...args.map(String)], {
      encoding: 'utf8',
    });
  } catch {
    return null;
  }
}

export function udpFloorNode(port: number, count: number, bytes: number): number | null {
  const out = node(['udp', port, count, bytes]);
  return out === null ? null : per(out, count);
}

export function httpFloorNode(port: number, lines: number, bytesPerLine: number, batch: number): number | null {
  const out = node(['http', port, lines, bytesPerLine, batch]);
  return out === null ? null : per(out, lines);
}

/** The same lines appended to the file `path` (then removed) in writes of `batch` lines, as the machine file is. */
export function fileFloorNode(path: string, lines: number, bytesPerLine: number, batch: number): number | null {
  const out = node(['file', path, lines, bytesPerLine, batch]);
  return out === null ? null : per(out, lines);
}

/** The C loop, compiled into `dir` (gcc -O2) the first time; null without gcc. */
export function udpFloorC(dir: string, port: number, count: number, bytes: number): number | null {
  const bin = join(dir, 'udp-floor');
  if (!existsSync(bin)) {
    const cc = spawnSync('gcc', ['-O2', '-o', bin, join(import.meta.dirname, 'udp-floor.c')], { stdio: 'ignore' });
    if (cc.status !== 0) return null;
  }
  try {
    return per(execFileSync(bin, [String(port), String(count), String(bytes)], { encoding: 'utf8' }), count);
  } catch {
    return null;
  }
}
