/**
 * deployEnvironment: deploy, redeploy and rollback of one environment (workflow id
 * workflowIds.environmentDeploy(envId), started with the FAIL conflict policy: one at a time).
 *
 *   deploy   = resolve the git ref's head, build the release (skipped when a ready release of that commit
 *              exists for the environment), run the deploy steps unless skip_steps, go live;
 *   redeploy = the live release again, deploy steps included unless skip_steps;
 *   rollback = the release before the last successful deployment, code only (no deploy steps).
 *
 * The task row is recorded and moved by idempotent activities; whatever fails, the previous release keeps
 * serving and the task ends `failed` with a readable error. Cancelled while pending: ends `cancelled`.
 */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  isCancellation,
  proxyActivities,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import type { BuildActivities, DeployActivities } from '../activities/deploys';
import type { TaskActivities } from '../activities/tasks';
import { buildTaskQueue, shortSha, type DeployOutcome, type DeployWorkflowInput, type TaskResult } from './deploys-shared';

export const taskActs = proxyActivities<TaskActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', maximumInterval: '20s' },
});

export const deployActs = proxyActivities<DeployActivities>({
  startToCloseTimeout: '3m',
  retry: { initialInterval: '1s', maximumInterval: '20s', maximumAttempts: 5 },
});

/** Long activities: heartbeats every second; a dead worker is noticed within heartbeatTimeout. */
const longBase = {
  heartbeatTimeout: '10s',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { initialInterval: '1s', maximumInterval: '10s', maximumAttempts: 3 },
} as const;

/**
 * The build activity (builds task queue): it waits, heartbeating, for a build slot of the whole system
 * (activities/deploys/build-gate.ts), for as long as the line ahead takes, then builds within its own limit
 * (checkout and up to 20 steps); so only the heartbeat bounds the attempt, and a worker killed while
 * waiting or building is noticed within heartbeatTimeout and the build retried on another worker.
 */
export function buildActivities() {
  return proxyActivities<BuildActivities>({
    ...longBase,
    taskQueue: buildTaskQueue(workflowInfo().taskQueue),
    startToCloseTimeout: '7d',
  });
}

function stepActivities(stepTimeoutSeconds: number) {
  return proxyActivities<DeployActivities>({
    ...longBase,
    startToCloseTimeout: `${stepTimeoutSeconds * 20 + 300}s`,
  });
}

/** Ends the task: raised inside the runner with the readable reason. */
class TaskFailed extends Error {}
class TaskCancelled extends Error {}

export function failure(message: string): never {
  throw new TaskFailed(message);
}

/** The task was cancelled before anything started it. */
export function cancelled(): never {
  throw new TaskCancelled('cancelled');
}

/** A readable reason out of what a workflow step threw. */
export function describeError(err: unknown): string {
  let e: unknown = err;
  while (e instanceof ActivityFailure && e.cause) e = e.cause;
  if (e instanceof TimeoutFailure) return 'a step did not finish in time';
  if (e instanceof Error) return e.message || e.name;
  return String(e);
}

/**
 * Runs a task's body between its recording and its ending: records the row, runs `body`, and ends the task
 * (succeeded with the result, failed with the reason, cancelled) in the log and the row.
 */
export async function runTask(
  input: DeployWorkflowInput,
  body: (ctx: { log: (...lines: string[]) => Promise<void>; start: () => Promise<void> }) => Promise<TaskResult>,
): Promise<DeployOutcome> {
  const taskId = input.task.id;
  const record = { ...input.task, run_id: workflowInfo().firstExecutionRunId };
  const log = (...lines: string[]) => taskActs.appendTaskLog({ taskId, lines });
  const start = async () => {
    if (!(await taskActs.startTask(taskId))) cancelled();
  };
  try {
    await taskActs.recordTask(record);
    const result = await body({ log, start });
    await taskActs.finishTask({ taskId, status: 'succeeded', result });
    return { status: 'succeeded', result };
  } catch (err) {
    // The workflow was asked to cancel: it ends cancelled, also when the activity it waited on could not say
    // so itself (e.g. its worker died before it noticed, and it timed out).
    const cancelRequested = CancellationScope.current().consideredCancelled;
    if (err instanceof TaskCancelled || isCancellation(err) || cancelRequested) {
      await CancellationScope.nonCancellable(async () => {
        await taskActs.recordTask(record);
        await log('==> Cancelled');
        await taskActs.finishTask({ taskId, status: 'cancelled', error: 'cancelled' });
      });
      if (isCancellation(err)) throw err;
      if (cancelRequested) throw new CancelledFailure('cancelled');
      return { status: 'cancelled', error: 'cancelled' };
    }
    const message = err instanceof TaskFailed ? err.message : describeError(err);
    await CancellationScope.nonCancellable(async () => {
      await taskActs.recordTask(record);
      await log(`==> Failed: ${message}`);
      await taskActs.finishTask({ taskId, status: 'failed', error: message });
    });
    throw ApplicationFailure.nonRetryable(message, 'TaskFailed');
  }
}

/**
 * The release of the environment's git ref head: resolves the commit, reuses a ready release of it,
 * else builds one (waiting `pending` for a build slot of the whole system). Shared by deploy and build.
 */
export async function buildHead(
  input: DeployWorkflowInput,
  { log, start }: { log: (...lines: string[]) => Promise<void>; start: () => Promise<void> },
): Promise<{ releaseId: string; sha: string; gitRef: string }> {
  const { task, environment } = input;
  const gitRef = task.params.git_ref ?? environment.git_ref;
  const sha = await deployActs.resolveCommit({ taskId: task.id, projectId: task.project_id, gitRef });
  const prepared = await deployActs.prepareRelease({
    taskId: task.id,
    teamId: task.team_id,
    projectId: task.project_id,
    environmentId: environment.id,
    gitRef,
    sha,
    reuseReady: true,
  });
  if (prepared.ready) {
    await start();
    await log(`==> Release ${prepared.releaseId} of ${gitRef}@${shortSha(sha)} is already built; skipping the build`);
  } else {
    await log('==> Waiting for build capacity');
    const built = await buildActivities().buildTaskRelease({ taskId: task.id, releaseId: prepared.releaseId });
    if (!built.started) cancelled();
    if (!built.ok) failure(`build failed: ${built.message}`);
  }
  return { releaseId: prepared.releaseId, sha, gitRef };
}

export async function deployEnvironment(input: DeployWorkflowInput): Promise<DeployOutcome> {
  const { task, environment, skipSteps } = input;
  const type = task.type as 'deploy' | 'redeploy' | 'rollback';
  const steps = stepActivities(input.stepTimeoutSeconds);

  return runTask(input, async ({ log, start }) => {
    let releaseId: string;
    let sha: string;
    let gitRef: string;
    if (type === 'deploy') {
      ({ releaseId, sha, gitRef } = await buildHead(input, { log, start }));
    } else {
      await start();
      const chosen = await deployActs.chooseRelease({ taskId: task.id, environmentId: environment.id, type });
      if (!chosen.ok) failure(chosen.message);
      ({ releaseId, sha, gitRef } = chosen);
    }

    if (type === 'rollback') await log('==> Skipping deploy steps: a rollback deploys code only');
    else if (skipSteps) await log('==> Skipping deploy steps (skip_steps)');
    else {
      const ran = await steps.runDeploySteps({ taskId: task.id, releaseId });
      if (!ran.ok) failure(`deploy steps failed: ${ran.message}; the previous release keeps serving`);
    }

    const live = await steps.goLive({ taskId: task.id, releaseId, type, skipSteps: type === 'rollback' || skipSteps });
    if (!live.ok) failure(live.message);
    return { release_id: releaseId, commit_sha: sha, git_ref: gitRef, deployment_id: live.deploymentId, url: live.url };
  });
}
