/**
 * moveEnvironment (`machines`/`move`, exclusive on the environment, CONTRACT "Hosts"): the environment goes to
 * another host, as a drain, a lost host or an evacuation asks.
 *
 *   1. placed again as a new environment would be (never its current host, nor a draining, drained or lost one);
 *      no room: the task fails `no_capacity: ...`, naming the largest plan that fits, never a host;
 *   2. its live release started on the new host by the go-live that deploys use, on that host's queue
 *      (`release_ready`, `process_started`, `healthy`, `edge_switched`): the edge serves the new instances before
 *      the old ones leave, so a request is never dropped; the task succeeds there;
 *   3. then the old host's instances stop, on the old host's queue (`old_stopped`), unless that host is lost
 *      (it stops them itself when it rejoins).
 *
 * A drained environment whose volume held data at the last usage sample (or of which no sample says) has its
 * volume copied first (activities/machines/move-volume.ts): stopped on the old host (as a storage move stops it),
 * a files-only snapshot under its backup key put in the release store, put back on the new host; the store's
 * object is deleted once the move ended (succeeded or failed), the old host's copy once it succeeded.
 *
 * A move that fails before the switch puts the placement back (the old instances keep serving, or start again
 * when they were stopped for the copy; the edge serves them again), and, once it reached the new host, cleans up
 * there: what started stops, the volume copied there is deleted. Its error says why, where the environment is
 * now and what to do (moveFailed). Host names are the operator's: the log says "another machine".
 *
 * watchHosts: the `host-watch` schedule's run: one sweep (core/host-moves.ts), then each rejoined host's stale
 * instances stopped on its own queue.
 */
import { type ActivityOptions, patched, proxyActivities, sleep } from '@temporalio/workflow';
import type { DataActivities } from '../activities/data';
import type { DeployActivities } from '../activities/deploys';
import type { MoveActivities } from '../activities/machines/moves';
import type { MoveVolumeActivities } from '../activities/machines/move-volume';
import type { StorageActivities } from '../activities/storage';
import type { TaskActivities } from '../activities/tasks';
import { describeError, failure, runTask, type TaskWorkflowInput } from './task-runner';
import { profiles, stepProfile } from './profiles';
import { hostWaitSeconds, onHost } from './host-queue';

const acts = proxyActivities<MoveActivities>(profiles.bookkeeping);
const volumeActs = proxyActivities<MoveVolumeActivities>(profiles.bookkeeping);
/**
 * The host watch's steps heartbeat: a round starts a task per environment of a lost host (more than bookkeeping's
 * 30 s may pass), and a step taken by a host that dies meanwhile is run again elsewhere within the heartbeat
 * timeout (10 s) instead of holding every later round until its start-to-close timeout.
 */
const sweep = proxyActivities<MoveActivities>(profiles.heartbeating);
const taskActs = proxyActivities<TaskActivities>(profiles.quick);

/**
 * The patch that made a move failing on its new host clean up there (what it started stops, its copy of the
 * volume goes), serve the old host's instances again and say so in plain words: a move started before it replays
 * as it ran.
 */
const MOVE_FAILURE_PATCH = 'move-failure-clean-up';

/**
 * The patch that asks a drained host whether the volume holds anything, whatever the last usage sample said: a move
 * started before it replays as it ran.
 */
const ASK_OLD_HOST_PATCH = 'ask-old-host-volume';

/**
 * A move that failed once it reached its new host: why, where the environment is now, and what to do. Host names
 * are the operator's: the other machine, its previous machine.
 */
function moveFailed(cause: string, o: { fromLost: boolean; copied: boolean; backUp: boolean }): string {
  const unavailable = cause.startsWith('host_unavailable:');
  const why = unavailable
    ? 'host_unavailable: the machine this environment was moving to stopped answering, so the move did not finish'
    : `this environment did not start on another machine: ${cause}`;
  if (o.fromLost)
    return `${why}. It stays on its machine, which is down: the edge answers it 503 until that machine is back or it is evacuated.`;
  const now = o.backUp
    ? `It serves from its previous machine again${o.copied ? ', with its volume as it was' : ''}; nothing else changed`
    : 'It is back on its previous machine, but its web process did not start again there: reboot it';
  const todo = unavailable
    ? 'The move runs again when its machine is drained again'
    : 'Fix what stops it from starting on another machine; the move runs again when its machine is drained again';
  return `${why}. ${now}. ${todo}.`;
}

const WHY = {
  drain: 'its machine is being drained',
  lost: 'the machine it ran on is down',
  evacuate: 'the machine it ran on is down',
} as const;

export async function moveEnvironment(input: TaskWorkflowInput<'move'>) {
  const environmentId = input.task.environment_id!;
  const taskId = input.task.id;
  let leave: { host: string; waitSeconds: number; volume: string | null; newVolume: string | null } | null = null;
  const outcome = await runTask(input, async ({ params, log, start }) => {
    await start();
    await log(`==> Moving this environment to another machine: ${WHY[params.reason]}`);
    const facts = await acts.moveFacts({ environmentId });
    const placed = await acts.placeMove({ environmentId });
    if (placed.status === 'refused') {
      if (params.reason === 'lost') await acts.markHostLost({ environmentId });
      return failure(`no_capacity: ${placed.message}`);
    }
    // how long work sent to the old or the new host waits for it to take it
    const wait = hostWaitSeconds(placed);
    // a drain from a host that is up: a volume that holds data is copied. Its host is asked: the last usage sample
    // may be RESOURCE_SAMPLE_SECONDS old, and a file written since would stay behind (a move started before this
    // asked only when no sample said)
    const onOldHost = <A>(profile: ActivityOptions) => proxyActivities<A>(onHost(placed.from, wait, profile));
    const askOldHost = patched(ASK_OLD_HOST_PATCH);
    let copyVolume = params.reason === 'drain' && (askOldHost || facts.volumeHeld !== false) && !placed.fromLost;
    if (copyVolume && (askOldHost || facts.volumeHeld === null)) {
      const held = await onOldHost<MoveVolumeActivities>(profiles.quick)
        .volumeHoldsFiles({ environmentId })
        .catch(async (err) => {
          await acts.revertMove({ environmentId, host: placed.from });
          throw err;
        });
      copyVolume = held;
    }
    let copied: { volume: string; bytes: number; stopped: boolean; stoppedAt: number } | null = null;
    let putBack: { volume: string; previousLocation: string | null } | null = null;
    /** Work was sent to the new host: a failure from then on cleans up there. */
    let reachedNew = false;
    try {
      if (copyVolume) {
        copied = await onOldHost<MoveVolumeActivities>(profiles.long).copyVolumeOut({ taskId, environmentId });
        const onNewVolume = proxyActivities<MoveVolumeActivities>(onHost(placed.to, wait, profiles.long));
        reachedNew = true;
        putBack = await onNewVolume.copyVolumeIn({ taskId, environmentId });
      }
      if (params.reason === 'evacuate' && params.backup_id) {
        // its data first, from the snapshot, on the new host: the release then starts with it
        const onNewData = proxyActivities<DataActivities>(onHost(placed.to, wait, profiles.long));
        reachedNew = true;
        await onNewData.restoreBackup({ taskId, backupId: params.backup_id, environmentId });
      }
      if (facts.liveReleaseId) {
        const onNew = proxyActivities<DeployActivities>(onHost(placed.to, wait, stepProfile('15m')));
        reachedNew = true;
        await onNew.goLive({ taskId, releaseId: facts.liveReleaseId, type: 'move', skipSteps: true });
      } else {
        await log('==> No release is live: nothing to start');
      }
    } catch (err) {
      // the old instances still serve (a lost host's do not: it waits for its host, or an evacuation)
      if (putBack) await volumeActs.restoreVolumeLocation({ environmentId, location: putBack.previousLocation });
      if (!placed.fromLost) await acts.revertMove({ environmentId, host: placed.from });
      else await acts.markHostLost({ environmentId });
      const cleanUp = patched(MOVE_FAILURE_PATCH);
      let backUp = true;
      if (copyVolume) {
        // stopped for the copy: they start again where the volume still is; no copy stays in the store
        if (facts.liveReleaseId)
          await onOldHost<StorageActivities>(profiles.untilDone)
            .startWebAfterMove({ taskId, environmentId })
            .catch(() => {
              backUp = false;
              return log('==> The previous instances did not start again');
            });
        await volumeActs.dropVolumeCopy({ taskId, environmentId });
      } else if (cleanUp && !placed.fromLost && facts.liveReleaseId) {
        // the edge serves the old instances, whatever the new host published before it failed
        await onOldHost<MoveActivities>(profiles.quick)
          .serveHereAgain({ environmentId })
          .catch(() => log('==> The edge could not be pointed at the previous instances again'));
      }
      if (!cleanUp || !reachedNew) throw err;
      const cause = describeError(err);
      // the new host: what started there stops, and the volume copied there goes (unless it is the old one's
      // very directory); a new host that did not take the work in time is down: no one would take this either
      if (!cause.startsWith('host_unavailable:')) {
        const onNew = proxyActivities<MoveActivities & MoveVolumeActivities>(onHost(placed.to, wait, profiles.quick));
        await onNew.leaveAfterFailedMove({ taskId, environmentId }).catch(() => undefined);
        if (putBack && copied)
          await onNew
            .removeCopiedVolume({ taskId, volume: putBack.volume, oldVolume: copied.volume })
            .catch(() => log('==> The copy of the volume on the other machine could not be deleted'));
      }
      return failure(moveFailed(cause, { fromLost: placed.fromLost, copied: copyVolume, backUp }));
    }
    await acts.markMoved({ environmentId });
    await log('==> This environment now runs on another machine');
    if (copied) {
      await volumeActs.dropVolumeCopy({ taskId, environmentId });
      const stoppedFor = Math.max(0, Math.round((Date.now() - copied.stoppedAt) / 1000));
      await log(
        `==> Its volume was copied (${copied.bytes} bytes through the store, deleted from it since); ` +
          `it was stopped for ${stoppedFor} s`,
      );
    }
    if (params.reason === 'evacuate' && params.backup_id) {
      const told = await acts.mailEvacuation({ taskId, environmentId, backupId: params.backup_id });
      await log(`==> The team's owners and admins were told what was lost (${told} e-mail${told === 1 ? '' : 's'})`);
    }
    if (!placed.fromLost)
      leave = {
        host: placed.from,
        waitSeconds: wait,
        volume: copied?.volume ?? null,
        newVolume: putBack?.volume ?? null,
      };
    return { moved: true, reason: params.reason };
  });
  // after the task succeeded at edge_switched (CONTRACT "Tasks"): the old instances stop (`old_stopped`)
  const from = leave as { host: string; waitSeconds: number; volume: string | null; newVolume: string | null } | null;
  if (outcome.status === 'succeeded' && from) {
    const onOld = proxyActivities<MoveActivities & MoveVolumeActivities>(
      onHost(from.host, from.waitSeconds, profiles.untilDone),
    );
    await onOld.leaveHost({ taskId, environmentId }).catch(() => undefined); // a host lost meanwhile stops them when it rejoins
    if (from.volume && from.newVolume)
      await onOld.removeOldVolume({ taskId, volume: from.volume, newVolume: from.newVolume }).catch(() => undefined); // a host lost meanwhile keeps its copy
  }
  return outcome;
}

/** The patch that closes tasks whose workflow ended without them, in each round: a round before it replays as it ran. */
const CLOSE_ORPHANED_TASKS_PATCH = 'close-orphaned-tasks';

type WatchRound = { lost: string[]; drained: string[]; rejoined: string[]; orphaned?: string[] };

/**
 * The host watch (the `host-watch` schedule on npm start's worker). With `forSeconds`, a run does a round every
 * `everySeconds` for that long, so that Temporal's list holds one run every few minutes and not one per round (the
 * schedule fires every `everySeconds` and skips while a run is under way, so the next run starts within a round's
 * time of this one's end). Without it (a run by hand, or of a schedule made before), one round. It answers what
 * its rounds did, each host or task once.
 */
export async function watchHosts(input?: {
  everySeconds?: number;
  forSeconds?: number;
}): Promise<WatchRound & { rounds: number }> {
  const every = Math.max(1, input?.everySeconds ?? 5) * 1000;
  const end = Date.now() + (input?.forSeconds ?? 0) * 1000;
  const seen: Required<WatchRound> = { lost: [], drained: [], rejoined: [], orphaned: [] };
  let rounds = 0;
  let orphanedAsked = false;
  for (;;) {
    const round = await watchRound();
    rounds++;
    for (const key of ['lost', 'drained', 'rejoined', 'orphaned'] as const)
      for (const x of round[key] ?? []) if (!seen[key].includes(x)) seen[key].push(x);
    orphanedAsked ||= round.orphaned !== undefined;
    if (Date.now() + every >= end) break;
    await sleep(every);
  }
  return { ...seen, orphaned: orphanedAsked ? seen.orphaned : undefined, rounds };
}

/**
 * One round of the host watch: one sweep (core/host-moves.ts), then each rejoined host's stale instances stopped.
 * It also ends the tasks whose workflow was ended outside the console (activities/tasks closeOrphanedTasks).
 */
async function watchRound(): Promise<WatchRound> {
  const { graceSeconds, ...round } = await sweep.sweepHosts();
  const wait = hostWaitSeconds({ lostSeconds: 0, graceSeconds });
  for (const host of round.rejoined) {
    // a few attempts: the watch's next round asks again, and a long wait here would hold every round up
    const onRejoined = proxyActivities<MoveActivities>(onHost(host, wait, profiles.heartbeating));
    try {
      await onRejoined.stopStaleInstances();
      await sweep.rejoinDone({ host });
    } catch {
      // its agent did not take the work within the grace: the next round asks again
    }
  }
  // after the hosts' part, which it never holds up: a round that could not ask leaves it to the next
  const orphaned = patched(CLOSE_ORPHANED_TASKS_PATCH)
    ? await taskActs.closeOrphanedTasks().catch(() => [] as string[])
    : undefined;
  return { ...round, orphaned };
}
