import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleOption } from '@temporalio/worker';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Deps } from './deps';
import { createActivities } from '../activities';
import { BUILD_ACTIVITY_NAMES } from '../activities/deploys';
import { buildTaskQueue } from '../workflows/deploys-shared';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
export const WORKFLOWS_PATH = join(root, 'workflows', 'index.ts');

/** Bundles the workflow code once (webpack); tests share one bundle across files. */
export async function bundleWorkflows(): Promise<{ code: string }> {
  return bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietBundlerLogger });
}

const quietBundlerLogger = {
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (m: string) => console.warn(m),
  error: (m: string) => console.error(m),
  log: () => undefined,
};

export interface RunningWorker {
  worker: Worker;
  /** Resolves when the worker has stopped. */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * Creates and runs the Temporal worker of this process: every workflow and the activities of every
 * area (the local provider among them, with its supervised web processes).
 */
export async function startWorker(
  deps: Deps,
  opts: { taskQueue?: string; workflowBundle?: WorkflowBundleOption; identity?: string } = {},
): Promise<RunningWorker> {
  const connection = await NativeConnection.connect({ address: deps.config.temporalAddress });
  const activities = await createActivities(deps);
  // A prebuilt bundle (tests run worker processes with the run's bundle instead of bundling again).
  const prebuilt = process.env.VC_WORKFLOW_BUNDLE_PATH;
  if (!opts.workflowBundle && prebuilt) opts = { ...opts, workflowBundle: { code: readFileSync(prebuilt, 'utf8') } };
  const worker = await Worker.create({
    connection,
    namespace: deps.config.temporalNamespace,
    taskQueue: opts.taskQueue ?? deps.config.taskQueue,
    ...(opts.identity ? { identity: opts.identity } : {}),
    ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : { workflowsPath: WORKFLOWS_PATH, bundlerOptions: { logger: quietBundlerLogger } as never }),
    activities: activities.activities,
    shutdownGraceTime: '5s',
  });
  // Builds: their own task queue, served with at most config.buildConcurrency at once; a build waiting for
  // a slot stays scheduled (its task `pending`), taken in the order the queue hands them out.
  const builds = await Worker.create({
    connection,
    namespace: deps.config.temporalNamespace,
    taskQueue: buildTaskQueue(opts.taskQueue ?? deps.config.taskQueue),
    ...(opts.identity ? { identity: `${opts.identity}-builds` } : {}),
    activities: Object.fromEntries(BUILD_ACTIVITY_NAMES.map((name) => [name, activities.activities[name]])),
    maxConcurrentActivityTaskExecutions: deps.config.buildConcurrency,
    shutdownGraceTime: '5s',
  });
  await activities.onWorkerStart?.();
  const done = Promise.all([worker.run(), builds.run()])
    .then(() => undefined)
    .finally(async () => {
      await activities.onWorkerStop?.();
      await connection.close();
    });
  return {
    worker,
    done,
    async shutdown() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      if (builds.getState() === 'RUNNING') builds.shutdown();
      await done;
    },
  };
}
