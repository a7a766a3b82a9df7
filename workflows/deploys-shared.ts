/**
 * Shapes shared by the deploy and build workflows, their activities and the API that starts them (types only; the
 * names they share are in db/workflow-names.ts). Deterministic: no I/O here (imported by the workflow bundle).
 */

import type { DeployType } from '../db/vocabulary';
import type { TaskOutcome, TaskResult, TaskWorkflowInput } from '../db/task-record';

export type { DeployType };

/** Input of deployEnvironment and buildEnvironment. No secret (repository URLs are read by activities). */
export interface DeployWorkflowInput<T extends DeployType | 'build' = DeployType | 'build'>
  extends TaskWorkflowInput<T> {
  environment: { id: string; name: string; git_ref: string };
  project: { id: string; name: string };
  skipSteps: boolean;
  /** Per build or deploy step (config.stepTimeoutSeconds of the process that started the workflow). */
  stepTimeoutSeconds: number;
}

export type DeployOutcome = TaskOutcome & { result?: DeployResult };

interface DeployResult extends TaskResult {
  release_id?: string;
  commit_sha?: string;
  git_ref?: string;
  deployment_id?: string;
  url?: string;
}
