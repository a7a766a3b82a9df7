/**
 * stopProjectEnvironments: after a project is cancelled (api/projects/cancel-service.ts), takes each of its
 * environments' web processes off this host; the edge answers their ports and domains 503 "stopped". Data
 * stays (the daily prune deletes it after 30 days). Workflow id workflowIds.projectStop(projectId).
 */
import { proxyActivities } from '@temporalio/workflow';
import type { ProjectStopActivities } from '../activities/auto-deploy/project-stop';
import { profiles } from './profiles';

const { stopEnvironment } = proxyActivities<ProjectStopActivities>(profiles.untilDone);

export async function stopProjectEnvironments(input: {
  projectId: string;
  environmentIds: string[];
}): Promise<{ stopped: number }> {
  for (const id of input.environmentIds) await stopEnvironment({ environmentId: id });
  return { stopped: input.environmentIds.length };
}
