/**
 * The activity profiles: timeouts, heartbeats and retries, defined once. Every workflow's proxyActivities
 * takes one of these, so that activities of one sort fail, time out and retry alike. A user fault
 * (activities/toolkit/failures.ts) is never retried, whatever the profile; a host fault is retried as below.
 * Deterministic: no I/O here.
 */
import { ActivityCancellationType, type ActivityOptions, ApplicationFailure } from '@temporalio/workflow';
import type { UserFault } from '../activities/toolkit/failures';

const nonRetryable = (...types: UserFault[]): string[] => types;

/**
 * The heartbeat timeout of the steps that do not heartbeat in their own code (untilDone, quick, remote, daily, mail;
 * bookkeeping and delivery take 30 s in all): the worker heartbeats for them (activities/toolkit/keep-alive.ts), so
 * that a step whose worker died (its host lost: every host polls the shared queues) runs again elsewhere after this,
 * not after its start-to-close timeout (3 minutes to half an hour). Not shortened by
 * ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS (workflows/interceptors.ts): a step's event loop may be busy for seconds on a
 * loaded machine, and a timeout then would run it twice at once.
 */
const STEP_HEARTBEAT = '20s';

export const profiles = {
  /** Bookkeeping in the database (task rows, records, a DNS look-up): short, retried until it works. */
  bookkeeping: {
    startToCloseTimeout: '30s',
    retry: { initialInterval: '1s', maximumInterval: '20s' },
  },
  /** A change on the host that must happen in the end (stop, retire, close): retried until it does. */
  untilDone: {
    startToCloseTimeout: '5m',
    heartbeatTimeout: STEP_HEARTBEAT,
    retry: { initialInterval: '2s', maximumInterval: '5m' },
  },
  /** A bounded step of a task: a few attempts, then the task fails with the reason. */
  quick: {
    startToCloseTimeout: '3m',
    heartbeatTimeout: STEP_HEARTBEAT,
    retry: { initialInterval: '1s', maximumInterval: '20s', maximumAttempts: 5 },
  },
  /** A call to another service that may be slow (the ACME CA): a few attempts, a longer wait between. */
  remote: {
    startToCloseTimeout: '5m',
    heartbeatTimeout: STEP_HEARTBEAT,
    retry: { initialInterval: '5s', maximumInterval: '1m', maximumAttempts: 5 },
  },
  /** Minutes of work that heartbeat every second (restarts, applies, purges): a dead worker shows in 10s. */
  heartbeating: {
    startToCloseTimeout: '10m',
    heartbeatTimeout: '10s',
    retry: { initialInterval: '1s', maximumInterval: '10s', maximumAttempts: 3 },
  },
  /** Hours of copying that heartbeat every second (backups, restores, storage moves, reshapes). */
  long: {
    startToCloseTimeout: '6h',
    heartbeatTimeout: '15s',
    retry: { initialInterval: '2s', maximumInterval: '30s', maximumAttempts: 3 },
  },
  /** A round over many items that heartbeats after each (auto-deploy, sample pruning). */
  batch: {
    startToCloseTimeout: '1h',
    heartbeatTimeout: '2m',
    retry: { initialInterval: '5s', maximumInterval: '5m', maximumAttempts: 10 },
  },
  /** A daily job of a system schedule (the worker heartbeats for it): patient retries, well inside the day. */
  daily: {
    startToCloseTimeout: '30m',
    heartbeatTimeout: STEP_HEARTBEAT,
    retry: {
      initialInterval: '5s',
      backoffCoefficient: 2,
      maximumInterval: '5m',
      maximumAttempts: 10,
      nonRetryableErrorTypes: nonRetryable('InvalidInput'),
    },
  },
  /** An integration delivery: backoff from a second to an hour, 36 attempts (about a day). */
  delivery: {
    startToCloseTimeout: '30s',
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1h', maximumAttempts: 36 },
  },
  /** An e-mail: retried through a mail outage for up to 12 hours; a permanent refusal is not retried. */
  mail: {
    startToCloseTimeout: '3m',
    heartbeatTimeout: STEP_HEARTBEAT,
    scheduleToCloseTimeout: '12h',
    retry: {
      initialInterval: '2s',
      backoffCoefficient: 2,
      maximumInterval: '2m',
      nonRetryableErrorTypes: nonRetryable('InvalidInput', 'MailRefused'),
    },
  },
} satisfies Record<string, ActivityOptions>;

/**
 * Build and deploy steps: heartbeating, bounded by `startToCloseTimeout` (the user's step timeouts), and a
 * cancelled workflow waits for the step to stop before it ends.
 */
export function stepProfile(startToCloseTimeout: string, taskQueue?: string): ActivityOptions {
  return {
    ...profiles.heartbeating,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    startToCloseTimeout,
    ...(taskQueue ? { taskQueue } : {}),
  };
}

/** A workflow's own failure, of the same catalogue as the activities': never retried. */
export function fault(type: UserFault, message: string, ...details: unknown[]): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, type, ...details);
}
