/**
 * Names shared by workflows, activities, the worker and the API's Temporal client:
 * task queues, signals, queries and workflow id shapes. Deterministic: no I/O here.
 */
export const TASK_QUEUE_DEFAULT = 'vc-console';

/** Workflow ids are business keys. */
export const workflowIds = {
  /** Deploy, redeploy and rollback of one environment share this id: one at a time (FAIL conflict policy). */
  environmentDeploy: (environmentId: string) => `deploy-env-${environmentId}`,
  build: (taskId: string) => `build-${taskId}`,
  tokenExpiryReminders: 'token-expiry-reminders',
  /** The background re-check of a pending domain: one per domain. */
  domainRecheck: (domainId: string) => `domain-recheck-${domainId}`,
};

export const SCHEDULE_TOKEN_EXPIRY_REMINDERS = 'token-expiry-reminders';
