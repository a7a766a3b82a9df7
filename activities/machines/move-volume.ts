/**
 * The volume of a moving environment (workflows/moves.ts, CONTRACT "Hosts", issue 26 item 7): copied through the
 * release store (host/release-store.ts, reachable from every host) as a files-only snapshot encrypted under the
 * environment's backup key (host/snapshot-format.ts), under a key prefix of its own (`moves/<env>/<task>.vcb`;
 * ../data/store-copies.ts, which a sync from another host uses too).
 *
 *   - on the old host's queue: its web process stopped (as a storage move stops it), the snapshot taken and put
 *     in the store (`copyVolumeOut`); a move that fails after it starts the web process again there;
 *   - on the new host's queue: the object fetched and put back into the environment's volume under that host's
 *     STORAGE_ROOTS, swapped in only once complete (`copyVolumeIn`, data/put-back.ts putBack);
 *   - anywhere: the object deleted (`dropVolumeCopy`), whether the move succeeded or failed after the copy;
 *   - on the old host's queue, once the move succeeded: its copy of the volume deleted (`removeOldVolume`); on the
 *     new host's, once it failed after the copy was put back there: that copy deleted (`removeCopiedVolume`).
 *
 * Host names never reach the task: the log says how many bytes were copied and how long it was stopped.
 */
import path from 'node:path';
import type { Deps } from '../../system/deps';
import type { Provider } from '../../host/provider';
import { removeTree } from '../../host/no-follow';
import {
  environmentVolume,
  setVolumeLocation,
  volumeHasFiles,
  volumeLocation,
  volumePath,
} from '../../db/queries/storage';
import { recordTaskPhases } from '../../db/queries/task-phases';
import { putBack } from '../data/put-back';
import { volumeOwner } from '../storage/volume-env';
import { withTaskLog } from '../toolkit/task-log';
import { withHeartbeat } from '../toolkit/heartbeat';
import { userFault } from '../toolkit/failures';
import { dropStoreCopies, mib, putVolumeCopy, storeCopyKey, withVolumeCopy } from '../data/store-copies';

const moveCopyKey = (envId: string, taskId: string) => storeCopyKey('moves', envId, taskId);

/**
 * Deletes one host's copy of an environment's volume (`<root>/volumes/<environment id>`), unless it is the very
 * directory `kept` (two hosts sharing a STORAGE_ROOTS directory). False when nothing was deleted.
 */
async function removeVolumeCopy(volume: string, kept: string): Promise<boolean> {
  if (path.resolve(volume) === path.resolve(kept)) return false;
  const envId = path.basename(volume);
  const root = path.dirname(path.dirname(volume));
  if (volumePath(root, envId) !== volume) return false;
  await removeTree(path.dirname(volume), envId);
  return true;
}

export function createMoveVolumeActivities(deps: Deps, provider: Provider) {
  const { knex, config } = deps;
  const { supervisor } = provider;
  return {
    /** On the old host's queue, when a drain starts: whether the environment's volume holds anything here. */
    async volumeHoldsFiles(input: { environmentId: string }): Promise<boolean> {
      return volumeHasFiles(knex, config.storageRoots, input.environmentId);
    },

    /**
     * On the old host's queue: the web process stops (the edge's route stays, as during a storage move), and a
     * files-only snapshot of the volume goes to the store. Answers where the volume is here and the copy's size.
     */
    async copyVolumeOut(input: { taskId: string; environmentId: string }) {
      return withTaskLog(deps, input.taskId, (log) =>
        withHeartbeat(async () => {
          const envId = input.environmentId;
          log.line('==> Stopping this environment while its volume is copied');
          const stopped = await supervisor.stopWeb(envId);
          const stoppedAt = Date.now();
          if (!stopped) log.line('==> No web process runs here');
          await recordTaskPhases(knex, input.taskId, { old_stopped: new Date(stoppedAt).toISOString() });
          const volume = await environmentVolume(knex, config.storageRoots, envId);
          const storeKey = moveCopyKey(envId, input.taskId);
          const bytes = await putVolumeCopy(deps, provider, { volume, keyOf: envId, storeKey });
          log.line(`==> The volume was copied out, encrypted under this environment's backup key (${mib(bytes)})`);
          return { volume, bytes, stopped, stoppedAt };
        }),
      );
    },

    /**
     * On the new host's queue: the copy fetched from the store and put back into the environment's volume under
     * this host's STORAGE_ROOTS (its recorded root when this host has it, else this host's first root, recorded).
     * Answers the volume's path here and the root it was recorded under before (to put back if the move fails).
     */
    async copyVolumeIn(input: { taskId: string; environmentId: string }) {
      return withTaskLog(deps, input.taskId, (log) =>
        withHeartbeat(async () => {
          const envId = input.environmentId;
          const previousLocation = await volumeLocation(knex, envId);
          const moveRoot = previousLocation !== null && !config.storageRoots.includes(previousLocation);
          const volume = moveRoot
            ? volumePath(config.storageRoots[0], envId)
            : await environmentVolume(knex, config.storageRoots, envId);
          const copy = {
            keyOf: envId,
            storeKey: moveCopyKey(envId, input.taskId),
            missing: () => userFault('StorageTaskFailed', 'the copy of the volume is not in the release store'),
          };
          await withVolumeCopy(deps, provider, copy, async (parts) =>
            putBack({
              config,
              target: { login: null, volume, owner: await volumeOwner(deps, provider, envId) },
              parts,
              marker: input.taskId,
            }),
          );
          // recorded once complete: a failed put-back leaves the record as it was
          if (moveRoot) await setVolumeLocation(knex, envId, config.storageRoots[0]);
          log.line('==> The volume was put back on another machine');
          return { volume, previousLocation };
        }),
      );
    },

    /** The move failed after the copy was put back: the volume's recorded root is what it was. */
    async restoreVolumeLocation(input: { environmentId: string; location: string | null }): Promise<void> {
      if (input.location !== null) await setVolumeLocation(knex, input.environmentId, input.location);
    },

    /**
     * The copy in the store is deleted (the move succeeded, or failed after the copy), with any copy an earlier
     * move of the environment left there.
     */
    async dropVolumeCopy(input: { taskId: string; environmentId: string }): Promise<void> {
      await dropStoreCopies(provider, 'moves', input.environmentId);
    },

    /**
     * On the old host's queue, once the move succeeded: its copy of the volume is deleted, unless it is the very
     * directory the new host now uses (two hosts sharing a STORAGE_ROOTS directory).
     */
    async removeOldVolume(input: { taskId: string; volume: string; newVolume: string }): Promise<void> {
      if (!(await removeVolumeCopy(input.volume, input.newVolume))) return;
      await withTaskLog(deps, input.taskId, async (log) => log.line('==> The previous copy of the volume was deleted'));
    },

    /**
     * On the new host's queue, once a move failed after the copy was put back there: that copy is deleted (the
     * environment's volume is the old host's still), unless it is the very directory the old host uses.
     */
    async removeCopiedVolume(input: { taskId: string; volume: string; oldVolume: string }): Promise<void> {
      if (!(await removeVolumeCopy(input.volume, input.oldVolume))) return;
      await withTaskLog(deps, input.taskId, async (log) =>
        log.line('==> The copy of the volume on the other machine was deleted'),
      );
    },
  };
}

export type MoveVolumeActivities = ReturnType<typeof createMoveVolumeActivities>;
