/**
 * Where the edge's data plane keeps its files, under DATA_DIR/edge/haproxy (root-only, 0700): the
 * configuration HAProxy reads, the map and ACL files the runtime API changes, the sockets and the pidfile.
 * Every file is written atomically (a temporary file renamed over the old one), so HAProxy, a reload or an
 * operator never reads half a file.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface HaproxyPaths {
  dir: string;
  config: string;
  pidfile: string;
  /** The runtime API of the worker (stats socket, level admin). */
  admin: string;
  /** The master CLI (`show proc`, `reload`). */
  master: string;
  maps: string;
  acls: string;
}

export function haproxyPaths(dataDir: string): HaproxyPaths {
  const dir = join(dataDir, 'edge', 'haproxy');
  return {
    dir,
    config: join(dir, 'haproxy.cfg'),
    pidfile: join(dir, 'haproxy.pid'),
    admin: join(dir, 'admin.sock'),
    master: join(dir, 'master.sock'),
    maps: join(dir, 'maps'),
    acls: join(dir, 'acls'),
  };
}

export function ensureDirs(p: HaproxyPaths): void {
  for (const d of [p.dir, p.maps, p.acls]) {
    mkdirSync(d, { recursive: true, mode: 0o700 });
    chmodSync(d, 0o700);
  }
}

/** Writes `text` to `file` atomically; false when the file already holds exactly that. */
export function writeAtomic(file: string, text: string): boolean {
  try {
    if (readFileSync(file, 'utf8') === text) return false;
  } catch {
    // missing: written below
  }
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode: 0o600 });
  renameSync(tmp, file);
  return true;
}
