/**
 * Work that touches an environment's machine runs on its host's own task queue (CONTRACT "Hosts"), the shape of
 * Temporal's `worker-specific-task-queues` sample: the workflow learns the host (a local activity reading the
 * environment's placement), then sends those activities to `hostTaskQueue(...)` with a schedule-to-start
 * timeout of HOST_LOST_SECONDS + HOST_GRACE_SECONDS (30 s). Work sent to a host whose agent is down is never taken: it times out
 * and the task ends `failed` with `host_unavailable: ...` (describeError, task-runner.ts) instead of waiting.
 * With one host this is the same path: that host's queue. Deterministic: no I/O here.
 */
import { type ActivityOptions, patched, workflowInfo } from '@temporalio/workflow';
import { hostTaskQueue } from '../system/task-queues';
import { taskActs } from './task-runner';

/**
 * The patch that brought host queues: a workflow started before it (its history has no host lookup) replays
 * on the shared queue as it ran; every later one looks its host up (Temporal's `patched`).
 */
export const HOST_QUEUES_PATCH = 'host-queues';

/**
 * How long work waits for a host to take it beyond HOST_LOST_SECONDS: the contract's "+ 30 s", HOST_GRACE_SECONDS
 * where the activity that gave HOST_LOST_SECONDS gives it too (a history recorded before that setting has none:
 * its replay waits the 30 s it waited).
 */
const HOST_GRACE_SECONDS = 30;

/** How long work waits for a host to take it: HOST_LOST_SECONDS + HOST_GRACE_SECONDS, as an activity gave them. */
export function hostWaitSeconds(given: { lostSeconds: number; graceSeconds?: number }): number {
  return given.lostSeconds + (given.graceSeconds ?? HOST_GRACE_SECONDS);
}

/**
 * `profile` aimed at the environment's host queue, for proxyActivities (`proxyActivities<A>(await onEnvironmentHost(...))`:
 * a proxy itself is never awaited, its `then` would be taken for an activity). `bounded: false` leaves out the
 * schedule-to-start timeout: work that must happen in the end (stopping an environment) waits for the host.
 */
export async function onEnvironmentHost(
  environmentId: string,
  profile: ActivityOptions,
  o: { bounded?: boolean } = {},
): Promise<ActivityOptions> {
  if (!patched(HOST_QUEUES_PATCH)) return profile;
  const given = await taskActs.environmentHost({ environmentId });
  return {
    ...profile,
    taskQueue: hostTaskQueue(workflowInfo().taskQueue, given.host),
    ...(o.bounded === false ? {} : { scheduleToStartTimeout: `${hostWaitSeconds(given)}s` }),
  };
}

/**
 * `profile` aimed at a named host's queue (a move's new and old hosts), bounded like onEnvironmentHost's:
 * `waitSeconds` from hostWaitSeconds.
 */
export function onHost(host: string, waitSeconds: number, profile: ActivityOptions): ActivityOptions {
  return {
    ...profile,
    taskQueue: hostTaskQueue(workflowInfo().taskQueue, host),
    scheduleToStartTimeout: `${waitSeconds}s`,
  };
}

/**
 * The patch that sent the services server's work to its host's queue: a workflow started before it replays on
 * the shared queue as it ran.
 */
export const SERVICES_HOST_PATCH = 'services-host-queue';

/**
 * `profile` aimed at the queue of the host whose machine runs the services server (`hosts.runs_services`, npm
 * start's own): the work on that server's files (a database disk's move, the WAL archive's backups, point-in-time
 * restores, restore drills). No such host registered: the shared queue, as before.
 */
export async function onServicesHost(profile: ActivityOptions): Promise<ActivityOptions> {
  if (!patched(SERVICES_HOST_PATCH)) return profile;
  const given = await taskActs.servicesHost();
  if (!given.host) return profile;
  return onHost(given.host, hostWaitSeconds(given), profile);
}
