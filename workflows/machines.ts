/**
 * Machine tasks of a server (CONTRACT "Machines"): resizeServer (exclusive on the environment) and
 * rebootServer restart the server's instances one at a time, each health-checked before the old one leaves
 * the edge and stops (activities/machines/index.ts), so the environment keeps answering. A failed
 * restart leaves the old instance serving, the plan unchanged, and the task failed with the reason.
 * scaleEnvironment (exclusive) runs N web instances behind the edge.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { MachineActivities } from '../activities/machines';
import { runTask, type TaskWorkflowInput } from './task-runner';
import { profiles } from './profiles';
import { onEnvironmentHost } from './host-queue';

const acts = proxyActivities<MachineActivities>(profiles.bookkeeping);

/**
 * Restarting waits for health checks (up to a minute an instance); heartbeats say the worker lives. The instances
 * are on the environment's host: its queue (host-queue.ts).
 */
async function restartActs(environmentId: string) {
  // wrapped: a proxy itself is never what a promise resolves to (its `then` would be taken for an activity)
  return { onHost: proxyActivities<MachineActivities>(await onEnvironmentHost(environmentId, profiles.heartbeating)) };
}

/** Holds the server in `status` while `fn` runs, and back to `running` whatever happens. */
async function whileMarked<T>(serverId: string, status: 'resizing' | 'rebooting', fn: () => Promise<T>): Promise<T> {
  await acts.markServer({ serverId, status });
  try {
    return await fn();
  } finally {
    await acts.markServer({ serverId, status: 'running' });
  }
}

export async function resizeServer(input: TaskWorkflowInput<'resize'>) {
  return runTask(input, async ({ params: p, log, start }) => {
    await start();
    await log(
      `==> Resizing ${p.server_name} from ${p.from_plan} to ${p.plan} (${p.cpu} CPU, ${p.memory_mb} MB, ${p.disk_gb} GB)`,
    );
    return whileMarked(p.server_id, 'resizing', async () => {
      const { onHost } = await restartActs(input.task.environment_id!);
      const r = await onHost.restartServerInstances({
        taskId: input.task.id,
        serverId: p.server_id,
        size: { cpu: p.cpu, memoryMb: p.memory_mb, plan: p.plan },
      });
      await acts.recordServerPlan({
        serverId: p.server_id,
        plan: p.plan,
        cpu: p.cpu,
        memory_mb: p.memory_mb,
        disk_gb: p.disk_gb,
      });
      await log(`==> ${p.server_name} runs on ${p.plan}`);
      return { server_id: p.server_id, plan: p.plan, instances_restarted: r.restarted };
    });
  });
}

export async function rebootServer(input: TaskWorkflowInput<'reboot'>) {
  return runTask(input, async ({ params: p, log, start }) => {
    await start();
    await log(`==> Rebooting ${p.server_name}`);
    return whileMarked(p.server_id, 'rebooting', async () => {
      const { onHost } = await restartActs(input.task.environment_id!);
      const r = await onHost.restartServerInstances({ taskId: input.task.id, serverId: p.server_id });
      await log(`==> ${p.server_name} rebooted`);
      return { server_id: p.server_id, instances_restarted: r.restarted };
    });
  });
}

export async function scaleEnvironment(input: TaskWorkflowInput<'scale'>) {
  return runTask(input, async ({ params: p, log, start }) => {
    await start();
    await log(`==> Scaling ${p.server_name} from ${p.from} to ${p.instances} instance${p.instances === 1 ? '' : 's'}`);
    const { onHost } = await restartActs(input.task.environment_id!);
    const r = await onHost.scaleWebInstances({
      taskId: input.task.id,
      serverId: p.server_id,
      instances: p.instances,
    });
    await log(`==> ${p.server_name} runs ${r.instances} instance${r.instances === 1 ? '' : 's'}`);
    return { server_id: p.server_id, instances: r.instances };
  });
}
