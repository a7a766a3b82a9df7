/**
 * stopProjectEnvironments: after a project is cancelled (api/projects/cancel-service.ts), takes each of its
 * environments' web processes off this host; the edge answers their ports and domains 503 "stopped". Data
 * stays (the daily prune deletes it after 30 days). Workflow id workflowIds.projectStop(projectId).
 */
import { proxyActivities } from '@temporalio/workflow';
import type { ProjectStopActivities } from '../activities/auto-deploy/project-stop';
import { profiles } from './profiles';
import { onEnvironmentHost } from './host-queue';

export async function stopProjectEnvironments(input: {
  projectId: string;
  environmentIds: string[];
}): Promise<{ stopped: number }> {
  // each on its host's queue, waiting for a host that is down to come back (the stop must happen in the end)
  for (const id of input.environmentIds) {
    const acts = proxyActivities<ProjectStopActivities>(
      await onEnvironmentHost(id, profiles.untilDone, { bounded: false }),
    );
    await acts.stopEnvironment({ environmentId: id });
  }
  return { stopped: input.environmentIds.length };
}
