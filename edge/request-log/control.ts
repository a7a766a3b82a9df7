/**
 * Where the request log's files are (docs/edge-password-and-logs.md): the unix socket HAProxy's ring forwards
 * to, which the shipper process listens on (processes/shipper.ts), and its cursor. The edge's control plane writes
 * HAProxy's lines (`requestLogFragment`); it reads no line itself.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { RequestLogFragment } from './haproxy';

export function requestLogPaths(dataDir: string) {
  const dir = join(dataDir, 'edge', 'request-log');
  return {
    dir,
    socket: join(dir, 'reader.sock'),
    cursorFile: join(dir, 'cursor.json'),
  };
}

/** HAProxy's side of the request log: the lines' fragment (the shipper may start later). */
export function requestLogFragment(dataDir: string, ringSize?: number): RequestLogFragment {
  const paths = requestLogPaths(dataDir);
  mkdirSync(paths.dir, { recursive: true });
  // the Lua script of the sequence numbers before they came from a stick table: a DATA_DIR of an earlier version
  rmSync(join(paths.dir, 'sequence.lua'), { force: true });
  return { socket: paths.socket, ringSize };
}
