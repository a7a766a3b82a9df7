/**
 * A task's wait for the edges (docs/edge.md "In force when answered"): every edge applies a state read after
 * the task's change, within EDGE_TASK_WAIT_SECONDS, or the task fails naming the edge it waited for. No task
 * reports a state it did not see applied.
 */
import { Context } from '@temporalio/activity';
import type { Knex } from 'knex';
import { awaitEdges, edgeLabel } from '../../db/queries/edge-routes';
import { userFault } from './failures';

/** Heartbeats when run in an activity (a wait of a minute outlasts a heartbeat timeout). */
function heartbeat(): void {
  try {
    Context.current().heartbeat();
  } catch {
    // not in an activity
  }
}

/**
 * Waits for every edge to apply the change; with `environmentId`, also to listen on that environment's port (an
 * edge whose host has another program on it is not serving the environment, whatever it applied).
 */
export async function untilEdgesApply(
  o: { knex: Knex; seconds: number; environmentId?: string },
  say?: (line: string) => void,
): Promise<void> {
  const beat = setInterval(heartbeat, 1000);
  let behind: Awaited<ReturnType<typeof awaitEdges>>;
  try {
    behind = await awaitEdges(
      o.knex,
      o.seconds * 1000,
      (waiting) =>
        say?.(`==> Waiting up to ${o.seconds} s for the edge ${waiting.map(edgeLabel).join(', ')} to apply the change`),
      o.environmentId,
    );
  } finally {
    clearInterval(beat);
  }
  if (behind.length === 0) return;
  const held = behind.filter((e) => e.held !== null);
  if (held.length === behind.length) {
    const port = held[0].held;
    const names = held.map(edgeLabel).join(', ');
    const message = `the edge ${names} cannot listen on the environment's port ${port}: another program on its host holds it. Find it with \`ss -ltnp 'sport = :${port}'\` and stop it; the edge serves the port within a second of it being free, and the change is saved`;
    say?.(`==> ${message}`);
    throw userFault('EdgePortHeld', message);
  }
  const names = behind.map(edgeLabel).join(', ');
  say?.(`==> The edge ${names} did not apply the change within ${o.seconds} s`);
  throw userFault(
    'EdgeUnavailable',
    `the edge ${names} did not apply the change within ${o.seconds} s (EDGE_TASK_WAIT_SECONDS); it is saved and applied when that edge is back`,
  );
}
