/**
 * buildEnvironment: builds a release of the environment's git ref head without putting it live
 * (workflow id workflowIds.build(taskId)). A ready release of that commit is reused. The task waits
 * `pending` until a build slot of the whole system takes it, in request order (build-gate.ts).
 */
import { buildActivities, cancelled, deployActs, failure, runTask } from './deploy';
import { shortSha, type DeployOutcome, type DeployWorkflowInput } from './deploys-shared';

export async function buildEnvironment(input: DeployWorkflowInput): Promise<DeployOutcome> {
  const { task, environment } = input;
  const builds = buildActivities();

  return runTask(input, async ({ log, start }) => {
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
      await log(`==> Release ${prepared.releaseId} of ${gitRef}@${shortSha(sha)} is already built`);
    } else {
      await log('==> Waiting for build capacity');
      const built = await builds.buildTaskRelease({ taskId: task.id, releaseId: prepared.releaseId });
      if (!built.started) cancelled();
      if (!built.ok) failure(`build failed: ${built.message}`);
    }
    return { release_id: prepared.releaseId, commit_sha: sha, git_ref: gitRef };
  });
}
