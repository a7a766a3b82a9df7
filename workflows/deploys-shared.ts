/**
 * Shapes shared by the deploy and build workflows, their activities and the API that starts them.
 * Deterministic: no I/O here (imported by the workflow bundle).
 */

export type DeployType = 'deploy' | 'redeploy' | 'rollback';
export type TaskType = DeployType | 'build';
export type TaskVia = 'session' | 'cli' | 'token' | 'system';

/**
 * The whole task row as the API chose it. The API starts the workflow with it, then inserts it; the
 * workflow's first activity inserts the same row (ON CONFLICT DO NOTHING), so neither exists without the
 * other whatever crashes in between.
 */
export interface TaskRecord {
  id: string;
  team_id: string;
  project_id: string;
  environment_id: string;
  kind: 'deployments';
  type: TaskType;
  account_user_id: string | null;
  account_via: TaskVia;
  workflow_id: string;
  params: { git_ref?: string; skip_steps?: boolean };
  created_at: string;
}

/** Input of deployEnvironment and buildEnvironment. No secret (repository URLs are read by activities). */
export interface DeployWorkflowInput {
  task: TaskRecord;
  environment: { id: string; name: string; git_ref: string };
  project: { id: string; name: string };
  skipSteps: boolean;
  /** Per build or deploy step (config.stepTimeoutSeconds of the process that started the workflow). */
  stepTimeoutSeconds: number;
}

export interface DeployOutcome {
  status: 'succeeded' | 'failed' | 'cancelled';
  result?: TaskResult;
  error?: string;
}

export interface TaskResult {
  release_id?: string;
  commit_sha?: string;
  git_ref?: string;
  deployment_id?: string;
  url?: string;
  [key: string]: unknown;
}

/**
 * The task queue of build activities. Every worker serves it; how many builds run at once across the system
 * (config.buildConcurrency) and in which order is decided in PostgreSQL (activities/deploys/build-gate.ts).
 */
export const buildTaskQueue = (taskQueue: string) => `${taskQueue}-builds`;

/** A readable one-line summary shown by the Temporal Web UI. */
export function taskSummary(type: TaskType, env: { name: string; git_ref: string }, project: { name: string }): string {
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
