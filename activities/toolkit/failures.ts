/**
 * The one failure rule of activities. A fault of the user's making (a ref that does not exist, a refused
 * repository, a resource deleted meanwhile, a copy that differs) is a non-retryable `ApplicationFailure`
 * whose type is one of USER_FAULTS: the workflow ends the task `failed` with its message, no retry wasted.
 * A fault of the host is thrown as it is and retried by the activity's profile (workflows/profiles.ts); where
 * its type matters, it is a retryable failure of HOST_FAULTS.
 */
import { ApplicationFailure } from '@temporalio/common';

const USER_FAULTS = {
  InvalidInput: 'an input the activity cannot use (a date, a key)',
  MailRefused: 'the mail server refused the message for good',
  DeliveryRefused: 'the integration endpoint refused the delivery for good',
  PurgeIncomplete: 'an edge did not apply a CDN purge in time',
  EdgeUnavailable: 'an edge did not apply the change within EDGE_TASK_WAIT_SECONDS',
  EdgePortHeld: "another program on an edge's host holds the environment's port",
  ServerMissing: 'the server was deleted meanwhile',
  EnvironmentMissing: 'the environment was deleted meanwhile',
  DomainMissing: 'the domain was deleted meanwhile',
  DomainNotVerified: 'the domain is not verified, so it cannot have a certificate',
  ReleaseMissing: 'the release was deleted meanwhile',
  NoRepository: 'the project has no repository connected',
  RefNotFound: 'the git ref does not exist in the repository',
  RepositoryRefused: 'the repository location is refused (the outbound guard)',
  RepositoryUnreachable: 'the repository did not answer after three attempts',
  DataTaskFailed: 'a backup, restore, sync or reset cannot go on (a service, destination or snapshot)',
  BackupRefused: 'the destination refused the backup',
  BackupFailed: 'the backup failed',
  RestoreFailed: 'the restore failed',
  SyncFailed: 'the sync failed',
  VerifyFailed: 'a restore drill found that the snapshot does not restore as its backup recorded',
  StorageTaskFailed: 'a storage move or growth cannot go on',
  ReshapeFailed: 'a reshape cannot go on',
  RestartFailed: 'a new instance did not come up healthy (the running ones keep serving)',
  NoReleaseToDeploy: 'nothing is live to redeploy, or there is no earlier release to roll back to',
  BuildFailed: 'the build failed (a step, the checkout, its time limit) or was cancelled',
  DeployStepsFailed: "the manifest's deploy steps failed; the previous release keeps serving",
  GoLiveFailed: 'the new release did not start healthy; the previous release keeps serving',
  // Thrown by workflows (workflows/profiles.ts `fault`):
  TaskFailed: 'a task workflow ends failed with its reason',
  RemindersFailed: 'some token reminders could not be sent; the next run tries them again',
} as const;
export type UserFault = keyof typeof USER_FAULTS;

const HOST_FAULTS = {
  DeliveryFailed: 'the integration endpoint failed; the delivery is retried with backoff',
  DeliveryNotCommitted:
    "a delivery's row is not there yet: the transaction that started its workflow commits after the start",
  BuildSlotLost: 'the build lost its build slot',
  WorkerStopped: 'the worker stopped while a build waited for capacity',
  ReleaseTampered: "a release's archive in the release store is not the one recorded at its build: refused",
  ReleaseStoreUnavailable: 'the release store (RELEASE_STORE) failed: unreachable, refused, or full',
} as const;
type HostFault = keyof typeof HOST_FAULTS;

/** A user fault: non-retryable, its message shown as the task's reason. */
export function userFault(type: UserFault, message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, type);
}

/** A host fault whose type matters: retried by the activity's retry policy. */
export function hostFault(type: HostFault, message: string): ApplicationFailure {
  return ApplicationFailure.retryable(message, type);
}
