/**
 * deployEnvironment: deploy, redeploy and rollback of one environment (workflow id
 * workflowIds.environmentChange(envId), started with the FAIL conflict policy: one at a time).
 *
 *   deploy   = resolve the git ref's head, build the release (skipped when a ready release of that commit
 *              exists for the environment), run the deploy steps unless skip_steps, go live;
 *   redeploy = the live release again, deploy steps included unless skip_steps;
 *   rollback = the release before the last successful deployment, code only (no deploy steps).
 *
 * The task row is recorded and moved by idempotent activities; whatever fails, the previous release keeps
 * serving and the task ends `failed` with a readable error. Cancelled while pending: ends `cancelled`.
 */
import { patched, proxyActivities, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { BuildActivities, DeployActivities } from '../activities/deploys';
import type { DeployOutcome, DeployType, DeployWorkflowInput } from './deploys-shared';
import { buildTaskQueue, shortSha } from '../db/workflow-names';
import { cancelled, failure, runTask, taskActs, type TaskContext } from './task-runner';
import { profiles, stepProfile } from './profiles';
import { HOST_QUEUES_PATCH, onEnvironmentHost } from './host-queue';

const deployActs = proxyActivities<DeployActivities>(profiles.quick);
/** Choosing the release of a redeploy or rollback reads the database only: a local activity. */
const localDeployActs = proxyLocalActivities<DeployActivities>(profiles.quick);

/**
 * The build activity (builds task queue): it waits, heartbeating, for a build slot of the whole system
 * (activities/deploys/build-gate.ts), for as long as the line ahead takes, then builds within its own limit
 * (checkout and up to 20 steps); so only the heartbeat bounds the attempt, and a worker killed while
 * waiting or building is noticed within heartbeatTimeout and the build retried on another worker.
 */
function buildActivities() {
  return proxyActivities<BuildActivities>(stepProfile('7d', buildTaskQueue(workflowInfo().taskQueue)));
}

/** The deploy steps and the go-live run in the environment's sandbox: on its host's queue (host-queue.ts). */
async function stepActivities(environmentId: string, stepTimeoutSeconds: number) {
  const options = await onEnvironmentHost(environmentId, stepProfile(`${stepTimeoutSeconds * 20 + 300}s`));
  return { steps: proxyActivities<DeployActivities>(options) };
}

/**
 * The release of the environment's git ref head: resolves the commit, reuses a ready release of it,
 * else builds one (waiting `pending` for a build slot of the whole system). Shared by deploy and build.
 */
export async function buildHead(
  input: DeployWorkflowInput,
  gitRef: string,
  { log, start }: Pick<TaskContext, 'log' | 'start'>,
): Promise<{ releaseId: string; sha: string; gitRef: string }> {
  const { task, environment, project } = input;
  // one activity: the commit, and the release to deploy (its first log line says whether it needs a build)
  const prepared = await deployActs.resolveRelease({
    taskId: task.id,
    teamId: task.team_id,
    projectId: project.id,
    environmentId: environment.id,
    gitRef,
    reuseReady: true,
  });
  const sha = prepared.sha;
  // the task was cancelled before its release was begun
  if (prepared.releaseId === null) cancelled();
  if (prepared.ready) {
    await start();
    await log(`==> Release ${prepared.releaseId} of ${gitRef}@${shortSha(sha)} is already built; skipping the build`);
  } else {
    await log('==> Waiting for build capacity');
    const built = await buildActivities().buildTaskRelease({ taskId: task.id, releaseId: prepared.releaseId });
    if (!built.started) cancelled();
  }
  return { releaseId: prepared.releaseId, sha, gitRef };
}

export async function deployEnvironment(input: DeployWorkflowInput<DeployType>): Promise<DeployOutcome> {
  const { task, environment, skipSteps } = input;
  const type = task.type;

  return runTask(input, async ({ params, log, start }) => {
    let releaseId: string;
    let sha: string;
    let gitRef: string;
    if (type === 'deploy') {
      const ref = 'git_ref' in params ? params.git_ref : environment.git_ref;
      ({ releaseId, sha, gitRef } = await buildHead(input, ref, { log, start }));
    } else {
      await start();
      ({ releaseId, sha, gitRef } = await localDeployActs.chooseRelease({
        taskId: task.id,
        environmentId: environment.id,
        type,
      }));
    }

    // a deploy succeeds elsewhere when the machine its environment ran on is down: placed again first
    // (host names are the operator's, CONTRACT "Hosts": the team's log says what happened, not where)
    const placed = patched(HOST_QUEUES_PATCH)
      ? await taskActs.replaceLostHost({ environmentId: environment.id })
      : { status: 'stays' as const };
    if (placed.status === 'refused')
      failure(
        `host_unavailable: the machine this environment runs on is down, and ${placed.message.charAt(0).toLowerCase()}${placed.message.slice(1)}`,
      );
    if (placed.status === 'moved')
      await log('==> host_unavailable: the machine this environment ran on is down; it now runs on another machine');
    const { steps } = await stepActivities(environment.id, input.stepTimeoutSeconds);
    if (type === 'rollback') await log('==> Skipping deploy steps: a rollback deploys code only');
    else if (skipSteps) await log('==> Skipping deploy steps (skip_steps)');
    else {
      await steps.runDeploySteps({ taskId: task.id, releaseId });
    }

    const live = await steps.goLive({ taskId: task.id, releaseId, type, skipSteps: type === 'rollback' || skipSteps });
    return {
      release_id: releaseId,
      commit_sha: sha,
      git_ref: gitRef,
      deployment_id: live.deploymentId ?? undefined,
      url: live.url,
    };
  });
}
