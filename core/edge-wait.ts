/**
 * "An answer means the change is done" for the edge (docs/edge.md "In force when answered"): a write that
 * changes what the edge serves answers once every edge has applied a state read after it
 * (db/queries/edge-routes.ts `awaitEdges`), at most EDGE_ANSWER_WAIT_MS; past that, 503 `edge_unavailable`,
 * the one error after which the change is kept (it is committed: the edge applies it when it is back).
 */
import type { Knex } from 'knex';
import { awaitEdges } from '../db/queries/edge-routes';
import { appError } from './errors';

const EDGE_ANSWER_WAIT_MS = 10_000;

/** Resolves once every edge serves the caller's committed change; throws 503 edge_unavailable after 10 s. */
export async function untilEdgesServe(knex: Knex, timeoutMs = EDGE_ANSWER_WAIT_MS): Promise<void> {
  const behind = await awaitEdges(knex, timeoutMs);
  if (behind.length === 0) return;
  throw appError(
    'edge_unavailable',
    `The change is saved, but ${behind.length === 1 ? 'an edge' : `${behind.length} edges`} did not apply it within ${Math.round(timeoutMs / 1000)} seconds: it will be applied when the edge is back`,
  );
}
