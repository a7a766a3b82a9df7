/**
 * Names shared by workflows, activities, the worker and the API's Temporal client:
 * task queues, signals, queries and workflow id shapes. Deterministic: no I/O here (the workflow bundle imports it).
 * Beside db/vocabulary.ts, so that every layer takes them from below.
 */
/**
 * The memo key of a run's shorter heartbeat timeout, in seconds (ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS, set by the
 * start: core/temporal-starts.ts; applied by workflows/interceptors.ts). Unset in production.
 */
export const HEARTBEAT_TIMEOUT_MEMO = 'vc_heartbeat_timeout_seconds';

/** Workflow ids are business keys. */
export const workflowIds = {
  /**
   * Every exclusive task of one environment (deploys, restores, resizes...: db/vocabulary.ts) shares this
   * id: one change at a time (FAIL conflict policy).
   */
  environmentChange: (environmentId: string) => `env-change-${environmentId}`,
  /** Any other task: its type and id. */
  task: (type: string, taskId: string) => `${type}-${taskId}`,
  tokenExpiryReminders: 'token-expiry-reminders',
  /** Stopping the environments of a cancelled project: one per project. */
  projectStop: (projectId: string) => `project-stop-${projectId}`,
  /** The auto-deploy poller of one task queue (one installation). */
  autoDeployPoller: (taskQueue: string) => `auto-deploy-poller-${taskQueue}`,
  /** The background re-check of a pending domain: one per domain. */
  domainRecheck: (domainId: string) => `domain-recheck-${domainId}`,
  /** The timer that ends a cancelled subscription at its period end: one per order. */
  subscriptionEnd: (order: string) => `subscription-end-${order}`,
  /** Taking a deleted environment off the host: one per environment. */
  environmentRetire: (environmentId: string) => `environment-retire-${environmentId}`,
  /** One delivery of one event to one integration. */
  integrationDelivery: (deliveryId: string) => `integration-delivery-${deliveryId}`,
  /** An event's e-mail to one person, sent again until the mail server takes it: one per mail and address. */
  eventEmail: (key: string) => `event-email-${key}`,
};

export const SCHEDULE_TOKEN_EXPIRY_REMINDERS = 'token-expiry-reminders';
export const SCHEDULE_RESOURCE_SAMPLES_PRUNE = 'resource-samples-prune';
export const SCHEDULE_PRUNE_EXPIRED = 'prune-expired';

/**
 * The task queue of build activities. Every worker serves it; how many builds run at once across the system
 * (config.buildConcurrency) and in which order is decided in PostgreSQL (activities/deploys/build-gate.ts).
 */
export const buildTaskQueue = (taskQueue: string) => `${taskQueue}-builds`;

/** A commit as the task logs show it. */
export const shortSha = (sha: string) => sha.slice(0, 7);
