/**
 * Moving environments between hosts (CONTRACT "Hosts", docs/hosts.md): each move is a `machines`/`move` task of
 * the environment's team, started by the system (`via: system`), exclusive like every change of an environment.
 *
 * - A drain (`npm run hosts -- drain NAME`): the host is `draining` (closed to placement) and a move starts for
 *   each environment on it; the sweep below makes it `drained` once none is left.
 * - A lost host (heartbeat older than HOST_LOST_SECONDS): the sweep (the `host-watch` schedule) takes it once:
 *   it is `drained`, its environments whose volume held nothing at the last usage sample move (they start on
 *   another host from their live release); the others' `web` server is `host_lost` and the edge answers them 503.
 * - A lost host that heartbeats again has rejoined: the workflow stops its stale instances on its queue, then
 *   clears the loss (the host stays `drained` until the operator undrains it).
 *
 * Host names never reach a team: tasks, logs and errors say "another machine".
 */
import type { Deps } from '../system/deps';
import { startTask } from './tasks';
import { setHostStatus } from '../db/queries/hosts';
import {
  environmentsOnHost,
  environmentsOnLostHosts,
  finishDrains,
  newestReadableSnapshot,
  type PlacedEnvironment,
  rejoinedHosts,
  setWebStatus,
  takeLostHosts,
  volumeHeldAtLastSample,
} from '../db/queries/host-moves';
import { publishEdgeRoute } from '../db/queries/edge-routes';

type MoveReason = 'drain' | 'lost' | 'evacuate';

/** What the edge answers for an environment whose host is lost and whose data is there (CONTRACT "Hosts"). */
const HOST_DOWN_TEXT = 'the machine this environment runs on is down';

const SUMMARIES: Record<MoveReason, string> = {
  drain: 'its machine is drained',
  lost: 'its machine is down',
  evacuate: 'its machine is down: restored from its newest snapshot',
};

/** Starts the environment's move (a `machines`/`move` task via `system`); null when another change runs on it. */
export async function startMove(
  deps: Deps,
  env: Pick<PlacedEnvironment, 'environment_id' | 'team_id' | 'project_id' | 'name'>,
  reason: MoveReason,
  backupId?: string,
): Promise<{ taskId: string } | { refused: string }> {
  try {
    const task = await startTask(
      deps,
      { via: 'system', userId: null },
      {
        type: 'move',
        teamId: env.team_id,
        projectId: env.project_id,
        environmentId: env.environment_id,
        params: { reason, ...(backupId ? { backup_id: backupId } : {}) },
        summary: `Move ${env.name} to another machine: ${SUMMARIES[reason]}`,
      },
    );
    return { taskId: task.id };
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'task_in_progress' || code === 'deploy_in_progress') return { refused: (err as Error).message };
    throw err;
  }
}

/** `npm run hosts -- drain NAME`: closes the host to placement and starts a move for each environment on it. */
export async function drainHost(
  deps: Deps,
  name: string,
): Promise<
  { found: false } | { found: true; moves: Array<{ environment: string; taskId?: string; refused?: string }> }
> {
  if (!(await setHostStatus(deps.knex, name, 'draining'))) return { found: false };
  const moves = [];
  for (const env of await environmentsOnHost(deps.knex, name)) {
    const r = await startMove(deps, env, 'drain');
    moves.push({ environment: env.name, ...r });
  }
  // nothing on it: drained at once
  await finishDrains(deps.knex);
  return { found: true, moves };
}

/** The environment answers 503 "the machine this environment runs on is down" (its data is on the lost host). */
export async function markHostLost(deps: Pick<Deps, 'knex'>, environmentId: string): Promise<void> {
  await setWebStatus(deps.knex, environmentId, 'host_lost');
  await publishEdgeRoute(deps.knex, environmentId, { kind: 'unavailable', text: HOST_DOWN_TEXT, releaseId: null });
}

/**
 * One round of the host watch: lost hosts taken (their environments moved or marked `host_lost`), drains that
 * have nothing left finished. Answers the hosts that rejoined (their stale instances are to stop, on their queue).
 */
export async function sweepHosts(deps: Deps): Promise<{ lost: string[]; drained: string[]; rejoined: string[] }> {
  const lost = await takeLostHosts(deps.knex, deps.config.hostLostSeconds, deps.config.hostName);
  for (const host of lost) deps.logger.warn({ host }, 'host lost: its environments move or are marked host_lost');
  // every round (a round that failed half-way, or a move refused now, is taken up by the next)
  for (const env of await environmentsOnLostHosts(deps.knex, deps.config.hostLostSeconds)) {
    const held = await volumeHeldAtLastSample(deps.knex, env.environment_id);
    if (held === false) {
      const r = await startMove(deps, env, 'lost');
      if ('refused' in r) deps.logger.info({ environmentId: env.environment_id }, `its move waits: ${r.refused}`);
      continue;
    }
    // its volume held data (or no sample says it did not): it waits for its host, or an evacuation
    await markHostLost(deps, env.environment_id);
  }
  const drained = await finishDrains(deps.knex);
  const rejoined = await rejoinedHosts(deps.knex, deps.config.hostLostSeconds);
  return { lost, drained, rejoined };
}

/** An environment an evacuation would restore, with the snapshot it would restore (null: no readable one). */
interface Evacuee {
  environment: PlacedEnvironment;
  snapshot: { id: string; finished_at: Date; age_seconds: number } | null;
}

/** `npm run hosts -- evacuate NAME`: the host's `host_lost` environments and their newest readable snapshots. */
export async function evacuationList(deps: Pick<Deps, 'knex'>, host: string): Promise<Evacuee[]> {
  const out: Evacuee[] = [];
  for (const env of await environmentsOnHost(deps.knex, host)) {
    if (env.server_status !== 'host_lost') continue;
    out.push({ environment: env, snapshot: await newestReadableSnapshot(deps.knex, env.environment_id) });
  }
  return out;
}
