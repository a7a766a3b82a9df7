/**
 * Shapes shared by the deploy and build workflows, their activities and the API that starts them.
 * Deterministic: no I/O here (imported by the workflow bundle).
 */

import type { DeployType, TaskType } from '../db/vocabulary';
import type { TaskOutcome, TaskRecord, TaskResult, TaskWorkflowInput } from '../db/task-record';

export type { DeployType, TaskRecord, TaskType };

/** Input of deployEnvironment and buildEnvironment. No secret (repository URLs are read by activities). */
export interface DeployWorkflowInput extends TaskWorkflowInput {
  environment: { id: string; name: string; git_ref: string };
  project: { id: string; name: string };
  skipSteps: boolean;
  /** Per build or deploy step (config.stepTimeoutSeconds of the process that started the workflow). */
  stepTimeoutSeconds: number;
}

export type DeployOutcome = TaskOutcome & { result?: DeployResult };

export interface DeployResult extends TaskResult {
  release_id?: string;
  commit_sha?: string;
  git_ref?: string;
  deployment_id?: string;
  url?: string;
}

/**
 * The task queue of build activities. Every worker serves it; how many builds run at once across the system
 * (config.buildConcurrency) and in which order is decided in PostgreSQL (activities/deploys/build-gate.ts).
 */
export const buildTaskQueue = (taskQueue: string) => `${taskQueue}-builds`;

/** A readable one-line summary shown by the Temporal Web UI. */
export function deploySummary(
  type: DeployType | 'build',
  env: { name: string; git_ref: string },
  project: { name: string },
): string {
  const where = `${env.name} (${project.name})`;
  switch (type) {
    case 'deploy':
      return `deploy ${env.git_ref} to ${where}`;
    case 'redeploy':
      return `redeploy the live release of ${where}`;
    case 'rollback':
      return `roll back ${where} to the release before the last deployment`;
    case 'build':
      return `build ${env.git_ref} for ${where}`;
  }
}

export const shortSha = (sha: string) => sha.slice(0, 7);
