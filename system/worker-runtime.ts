import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleOption } from '@temporalio/worker';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Deps } from './deps';
import { createActivities } from '../activities';

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
  const worker = await Worker.create({
    connection,
    namespace: deps.config.temporalNamespace,
    taskQueue: opts.taskQueue ?? deps.config.taskQueue,
    identity: opts.identity,
    ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : { workflowsPath: WORKFLOWS_PATH, bundlerOptions: { logger: quietBundlerLogger } as never }),
    activities: activities.activities,
    shutdownGraceTime: '5s',
  });
  await activities.onWorkerStart?.();
  const done = worker.run().finally(async () => {
    await activities.onWorkerStop?.();
    await connection.close();
  });
  return {
    worker,
    done,
    async shutdown() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}

