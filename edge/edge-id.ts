/**
 * The edge's row in `edge_instances` is its data plane's (docs/edge.md "In force when answered"): one id per
 * DATA_DIR, kept in DATA_DIR/edge/haproxy/edge-id. A control plane that adopts a running HAProxy carries on
 * its row (until it applies, the row counts as not applied: the waits hold); the row is deleted only once
 * that HAProxy has stopped (the control plane's close, or npm start's stop of an HAProxy left running).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Knex } from 'knex';
import { unregisterEdge } from '../db/queries/cdn';
import { type HaproxyPaths, writeAtomic } from './haproxy/paths';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const fileOf = (paths: HaproxyPaths) => join(paths.dir, 'edge-id');

/** The id recorded for this data plane, if any. */
function recordedEdgeId(paths: HaproxyPaths): string | null {
  try {
    const id = readFileSync(fileOf(paths), 'utf8').trim();
    return UUID.test(id) ? id : null;
  } catch {
    return null;
  }
}

/** This data plane's id: the recorded one, else a new one recorded now. */
export function edgeIdOf(paths: HaproxyPaths): string {
  const known = recordedEdgeId(paths);
  if (known) return known;
  const id = randomUUID();
  writeAtomic(fileOf(paths), `${id}\n`);
  return id;
}

/** How a task's log names an edge: its host and DATA_DIR. */
export const edgeName = (dataDir: string) => `${hostname()}:${dataDir}`;

/** After the data plane of `paths` has stopped: its row goes (nothing waits for it any more). */
export async function forgetStoppedEdge(knex: Knex, paths: HaproxyPaths): Promise<void> {
  const id = recordedEdgeId(paths);
  if (id) await unregisterEdge(knex, id);
}
