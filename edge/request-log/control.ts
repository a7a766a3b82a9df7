/**
 * Where the request log's files are (docs/edge-password-and-logs.md): the unix socket HAProxy's ring forwards
 * to, which the shipper process listens on (processes/shipper.ts), its cursor, and the Lua script of the
 * sequence numbers. The edge's control plane writes the script and HAProxy's lines (`requestLogFragment`); it
 * reads no line itself.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { writeAtomic } from '../haproxy/paths';
import { type RequestLogFragment, SEQUENCE_LUA } from './haproxy';

export function requestLogPaths(dataDir: string) {
  const dir = join(dataDir, 'edge', 'request-log');
  return {
    dir,
    socket: join(dir, 'reader.sock'),
    cursorFile: join(dir, 'cursor.json'),
    sequenceScript: join(dir, 'sequence.lua'),
  };
}

/** Writes the Lua script HAProxy takes the lines' sequence numbers from (SEQUENCE_LUA) to `file`. */
export function writeSequenceScript(file: string): string {
  mkdirSync(join(file, '..'), { recursive: true });
  writeAtomic(file, SEQUENCE_LUA);
  return file;
}

/** HAProxy's side of the request log: the script written, the lines' fragment (the shipper may start later). */
export function requestLogFragment(dataDir: string, ringSize?: number): RequestLogFragment {
  const paths = requestLogPaths(dataDir);
  writeSequenceScript(paths.sequenceScript);
  return { socket: paths.socket, sequenceScript: paths.sequenceScript, ringSize };
}
