/**
 * The request log's control-plane side in one call (docs/edge-password-and-logs.md): the reader on its unix
 * socket, handing lines to the edge's LogShipper. Start it before HAProxy (the ring connects to it; lines
 * wait in the ring until it listens).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { writeAtomic } from '../haproxy/paths';
import { type RequestLogFragment, SEQUENCE_LUA } from './haproxy';
import { type LineSink, RequestLogReader } from './reader';

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

export async function startRequestLog(o: {
  dataDir: string;
  /** The edge's LogShipper (source `requests`). */
  shipper: LineSink;
  ringSize?: number;
  /** How long a gap may stay open before it counts as lost (2 s). */
  reorderMs?: number;
  logger?: { warn(obj: unknown, msg?: string): void };
}): Promise<{ fragment: RequestLogFragment; reader: RequestLogReader; close(): Promise<void> }> {
  const paths = requestLogPaths(o.dataDir);
  const reader = await new RequestLogReader({
    socketPath: paths.socket,
    cursorFile: paths.cursorFile,
    sink: o.shipper,
    reorderMs: o.reorderMs,
    logger: o.logger,
  }).start();
  writeSequenceScript(paths.sequenceScript);
  return {
    fragment: { socket: paths.socket, sequenceScript: paths.sequenceScript, ringSize: o.ringSize },
    reader,
    close: () => reader.close(),
  };
}
