/**
 * Storage tasks (CONTRACT "Machines"): moveStorage (`storage_move`, exclusive on the environment) moves a
 * disk to another root of STORAGE_ROOTS while the web process is stopped, verified before it switches;
 * discardStorage (`storage_discard`) deletes the copies moves left; growVolume (`volume_grow`) grows the
 * environment's volume and its allowance. The work is in activities/storage.
 */
import { patched, proxyActivities } from '@temporalio/workflow';
import type { StorageActivities } from '../activities/storage';
import { runTask, type TaskWorkflowInput } from './task-runner';
import { profiles } from './profiles';
import { afterSwap } from './pitr';
import { onEnvironmentHost, onServicesHost, SERVICES_HOST_PATCH } from './host-queue';

/** Copies take as long as the data: heartbeats say the worker lives. */
const longActs = proxyActivities<StorageActivities>(profiles.long);

export async function moveStorage(input: TaskWorkflowInput<'storage_move'>) {
  return runTask(input, async ({ params: p, log, start }) => {
    await start();
    await log(`==> Moving the ${p.disk} disk from ${p.from} to ${p.to}`);
    const environmentId = input.task.environment_id!;
    // the files disk is on the environment's host (host-queue.ts)
    if (p.disk === 'files') {
      const onHost = proxyActivities<StorageActivities>(await onEnvironmentHost(environmentId, profiles.long));
      return onHost.moveStorageDisk({ taskId: input.task.id, environmentId, disk: p.disk, to: p.to });
    }
    // the database disk is the services server's: moved on its host, the web process stopped meanwhile on its own
    let moved: Awaited<ReturnType<StorageActivities['moveStorageDisk']>>;
    if (!patched(SERVICES_HOST_PATCH)) {
      moved = await longActs.moveStorageDisk({ taskId: input.task.id, environmentId, disk: p.disk, to: p.to });
    } else {
      const onEnvHost = proxyActivities<StorageActivities>(await onEnvironmentHost(environmentId, profiles.long));
      const onServices = proxyActivities<StorageActivities>(await onServicesHost(profiles.long));
      const { stopped } = await onEnvHost.stopWebForMove({ taskId: input.task.id, environmentId });
      try {
        moved = await onServices.moveDatabaseDisk({ taskId: input.task.id, environmentId, to: p.to });
      } finally {
        if (stopped) await onEnvHost.startWebAfterMove({ taskId: input.task.id, environmentId });
      }
    }
    await afterSwap(input.task.id);
    return moved;
  });
}

/**
 * The patch that discarded each old copy on the machine holding it: one started before it replays on the shared
 * queue, as it ran.
 */
const DISCARD_ON_HOSTS_PATCH = 'discard-on-hosts';

export async function discardStorage(input: TaskWorkflowInput<'storage_discard'>) {
  return runTask(input, async ({ log, start }) => {
    await start();
    const ids = { taskId: input.task.id, environmentId: input.task.environment_id! };
    if (!patched(DISCARD_ON_HOSTS_PATCH)) return longActs.discardOldStorage(ids);
    // the volume's old copy is on the environment's host; the kept database's tablespace on the services server's
    const onEnvHost = proxyActivities<StorageActivities>(await onEnvironmentHost(ids.environmentId, profiles.long));
    const onServices = proxyActivities<StorageActivities>(await onServicesHost(profiles.long));
    const files = await onEnvHost.discardOldStorage({ ...ids, disks: ['files'] });
    const database = await onServices.discardOldStorage({ ...ids, disks: ['database'] });
    const discarded = [...files.discarded, ...database.discarded];
    await log(discarded.length ? `==> Discarded: ${discarded.join(', ')}` : '==> Nothing to discard');
    return { discarded };
  });
}

export async function growVolume(input: TaskWorkflowInput<'volume_grow'>) {
  return runTask(input, async ({ params: p, log, start }) => {
    await start();
    await log(`==> Growing the volume from ${p.from_gb} GB to ${p.size_gb} GB`);
    // the volume is on the environment's host (host-queue.ts)
    const onHost = proxyActivities<StorageActivities>(
      await onEnvironmentHost(input.task.environment_id!, profiles.quick),
    );
    return onHost.growVolume({ taskId: input.task.id, volumeId: p.volume_id, sizeGb: p.size_gb });
  });
}
