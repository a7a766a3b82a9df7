import { NativeConnection, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import { existsSync, readFileSync } from 'node:fs';
import type { Deps } from '../system/deps';
import { createActivities } from '../activities';
import { BUILD_ACTIVITY_NAMES } from '../activities/deploys';
import { buildTaskQueue } from '../db/workflow-names';
import { hostTaskQueue } from '../system/config';
import { checkReleaseStore } from '../host/release-store';
import { bundleWorkflows } from './workflow-bundle';
import { keepAlive } from '../activities/toolkit/keep-alive';

/** Every worker's: an activity scheduled with a heartbeat timeout heartbeats while it runs (a dead worker's runs again). */
const interceptors = { activity: [keepAlive] };

/** Build activities one worker process holds at once, waiting for a slot or building. */
const BUILDS_TAKEN_PER_WORKER = 200;

export interface RunningWorker {
  worker: Worker;
  /** Resolves when the worker has stopped. */
  done: Promise<void>;
  shutdown(): Promise<void>;
  /** Stops what the worker runs on this host (the tenants' processes), once; shutdown() and `done` end with it. */
  stopHost(): Promise<void>;
}

/**
 * Creates and runs the Temporal worker of this process: every workflow and the activities of every
 * area (the local provider among them, with its supervised web processes).
 */
/** How long shutdown() waits for the Temporal workers to drain before it stops the host's processes anyway. */
const SHUTDOWN_WAIT_MS = 15_000;
/** How long shutdown() then waits for the activities the host's stop ended to finish (and flush their logs). */
const AFTER_STOP_WAIT_MS = 5_000;

export async function startWorker(
  deps: Deps,
  opts: {
    taskQueue?: string;
    workflowBundle?: WorkflowBundleOption;
    identity?: string;
    /** This process's host (default: HOST_NAME): it also polls the host's own queue (hostTaskQueue) with the same activities. */
    hostName?: string;
  } = {},
): Promise<RunningWorker> {
  // npm start's worker (and a test's) makes a directory release store and its machine marker when absent
  if (process.env.VC_HOST_AGENT !== '1') await checkReleaseStore(deps.config.releaseStore, { create: true });
  const connection = await NativeConnection.connect({ address: deps.config.temporalAddress });
  const activities = await createActivities(deps);
  // A prebuilt bundle: npm start's, made once per start (processes/workflow-bundle.ts), or the tests' run's. Where
  // there is none (its file is missing: it could not be made), the worker bundles for itself, the same way.
  const prebuilt = process.env.VC_WORKFLOW_BUNDLE_PATH;
  const workflowBundle =
    opts.workflowBundle ??
    (prebuilt && existsSync(prebuilt) ? { code: readFileSync(prebuilt, 'utf8') } : await bundleWorkflows());
  const worker = await Worker.create({
    connection,
    namespace: deps.config.temporalNamespace,
    taskQueue: opts.taskQueue ?? deps.config.taskQueue,
    ...(opts.identity ? { identity: opts.identity } : {}),
    workflowBundle,
    activities: activities.activities,
    shutdownGraceTime: '5s',
    interceptors,
  });
  // Builds: their own task queue (waiting builds do not take the main worker's activity slots). How many
  // run at once across the system, and in which order, is decided in PostgreSQL (build-gate.ts): a build
  // activity taken here may wait there, pending and heartbeating, so this worker takes many of them at once
  // (every one is then in the line in request order) and sends heartbeats often (a cancellation reaches a
  // waiting build within about a second).
  const builds = await Worker.create({
    connection,
    namespace: deps.config.temporalNamespace,
    taskQueue: buildTaskQueue(opts.taskQueue ?? deps.config.taskQueue),
    ...(opts.identity ? { identity: `${opts.identity}-builds` } : {}),
    activities: Object.fromEntries(BUILD_ACTIVITY_NAMES.map((name) => [name, activities.activities[name]])),
    maxConcurrentActivityTaskExecutions: Math.max(BUILDS_TAKEN_PER_WORKER, deps.config.buildConcurrency),
    maxHeartbeatThrottleInterval: '1s',
    shutdownGraceTime: '5s',
    interceptors,
  });
  // The host's own queue (CONTRACT "Hosts"): the work that must run on this machine (the environments placed
  // here: their instances, volumes, usage). Activities only.
  const host = await Worker.create({
    connection,
    namespace: deps.config.temporalNamespace,
    taskQueue: hostTaskQueue(opts.taskQueue ?? deps.config.taskQueue, opts.hostName ?? deps.config.hostName),
    ...(opts.identity ? { identity: `${opts.identity}-host` } : {}),
    activities: activities.activities,
    shutdownGraceTime: '5s',
    interceptors,
  });
  const workers = [worker, builds, host];
  await activities.onWorkerStart?.();
  // what the worker runs on this host (the tenants' processes, ...): stopped once, by whichever comes first
  let hostStopped: Promise<void> | undefined;
  const stopHost = () => {
    hostStopped ??= Promise.resolve(activities.onWorkerStop?.());
    return hostStopped;
  };
  const done = Promise.all(workers.map((w) => w.run()))
    .then(() => undefined)
    .finally(async () => {
      await stopHost();
      await connection.close();
    });
  return {
    worker,
    done,
    async shutdown() {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      // Temporal may be gone too (npm start's supervisor died, and every child was told to stop at once): the
      // workers' drain is not waited for past SHUTDOWN_WAIT_MS, the host's processes are stopped regardless
      let timer: NodeJS.Timeout | undefined;
      const drained = await Promise.race([
        done.then(() => true),
        new Promise<false>((r) => (timer = setTimeout(() => r(false), SHUTDOWN_WAIT_MS))),
      ]).finally(() => clearTimeout(timer));
      if (!drained) {
        await stopHost();
        // the activities that the host's stop ended (their waits aborted) write their last lines to their task
        // logs on the way out: the caller closes the database once this returns, and a line written after that
        // is lost (seen: a restart's "the task was cancelled or its worker is stopping" missing)
        await Promise.race([
          done.catch(() => undefined),
          new Promise((r) => setTimeout(r, AFTER_STOP_WAIT_MS).unref()),
        ]);
      }
    },
    stopHost,
  };
}
