/**
 * Every workflow and schedule the system starts, in one place (tasks start through core/tasks.ts, which
 * uses `startWorkflow` here). The search-attribute keys are defined here, from db/vocabulary.ts's names.
 *
 * - Workflows that are not tasks: stopping a cancelled project, a domain's background re-check, the end of a
 *   cancelled subscription, retiring a deleted environment, an integration delivery, the auto-deploy poller.
 * - Schedules: the system's (token-expiry reminders, prune-expired, resource-sample prune, certificate
 *   renewals), created when the worker starts and brought up to the current settings on every start with an
 *   operator's pause and note kept; and each project's backup window (`backups-<project_id>`).
 */
import {
  Client,
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdConflictPolicy,
  type ScheduleOptions,
  type ScheduleOptionsStartWorkflowAction,
  type ScheduleSpec,
  type Workflow,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { Deps } from '../system/deps';
import { DEFAULT_TASK_QUEUE } from '../system/config';
import { SEARCH_ATTRIBUTES } from '../db/vocabulary';
// Types only: the starts are typed by the workflow functions, and no workflow code is loaded here.
import type * as workflows from '../workflows';
import {
  SCHEDULE_PRUNE_EXPIRED,
  SCHEDULE_RESOURCE_SAMPLES_PRUNE,
  SCHEDULE_TOKEN_EXPIRY_REMINDERS,
  workflowIds,
  HEARTBEAT_TIMEOUT_MEMO,
} from '../db/workflow-names';

type TemporalDeps = { temporal: Client; config: { taskQueue: string; activityHeartbeatTimeoutSeconds?: number } };

// ---- Search attributes -------------------------------------------------------------------------------------

export type SearchAttributeName = (typeof SEARCH_ATTRIBUTES)[number];

const keyword = (name: SearchAttributeName) => defineSearchAttributeKey(name, SearchAttributeType.KEYWORD);

/** The Keyword search attributes (registered on the namespace by processes/temporal.ts), by name. */
export const searchAttributeKeys = Object.fromEntries(SEARCH_ATTRIBUTES.map((name) => [name, keyword(name)])) as Record<
  SearchAttributeName,
  ReturnType<typeof keyword>
>;

/** The typed search attributes of a start; unset or null values are left out. */
export function typedSearchAttributes(values: Partial<Record<SearchAttributeName, string | null>>) {
  return SEARCH_ATTRIBUTES.flatMap((name) => {
    const value = values[name];
    return value ? [{ key: searchAttributeKeys[name], value }] : [];
  });
}

// ---- Workflows ---------------------------------------------------------------------------------------------

/** A workflow's name: an export of workflows/index.ts, which the worker registers under it. */
export type WorkflowName = keyof typeof workflows;
/** The arguments the workflow named N takes. */
export type WorkflowArgs<N extends WorkflowName> = Parameters<(typeof workflows)[N]>;

export interface WorkflowStart<N extends WorkflowName> {
  workflow: N;
  workflowId: string;
  args: WorkflowArgs<N>;
  /** One readable line for the Temporal Web UI. */
  summary?: string;
  searchAttributes?: Partial<Record<SearchAttributeName, string | null>>;
  /** What a start meets when a run with this id is open: Temporal's error (the default), or that run kept. */
  whenOpen?: 'fail' | 'use_existing';
}

const CONFLICT = { fail: WorkflowIdConflictPolicy.FAIL, use_existing: WorkflowIdConflictPolicy.USE_EXISTING };

/**
 * Starts a workflow on the worker's task queue, typed by its function (`start<typeof deployEnvironment>`, as
 * Temporal's samples do, by name so that no workflow code is imported); returns its first run's id.
 */
export async function startWorkflow<N extends WorkflowName>(deps: TemporalDeps, s: WorkflowStart<N>): Promise<string> {
  // The args are checked at the call (WorkflowStart<N>); Temporal's options type cannot be resolved for a generic N.
  const options = {
    taskQueue: deps.config.taskQueue,
    workflowId: s.workflowId,
    args: s.args,
    ...(s.summary ? { staticSummary: s.summary } : {}),
    ...(s.searchAttributes ? { typedSearchAttributes: typedSearchAttributes(s.searchAttributes) } : {}),
    ...(s.whenOpen ? { workflowIdConflictPolicy: CONFLICT[s.whenOpen] } : {}),
    // ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS, when set, travels with the run (workflows/interceptors.ts)
    ...(deps.config.activityHeartbeatTimeoutSeconds
      ? { memo: { [HEARTBEAT_TIMEOUT_MEMO]: deps.config.activityHeartbeatTimeoutSeconds } }
      : {}),
  } as WorkflowStartOptions<(typeof workflows)[N]>;
  const handle = await deps.temporal.workflow.start<(typeof workflows)[N]>(s.workflow, options);
  return handle.firstExecutionRunId;
}

/** Stops the environments of a cancelled project (kept when one runs already). */
export async function startProjectStop(
  deps: TemporalDeps,
  project: { id: string; team_id: string; name: string },
  environmentIds: string[],
): Promise<void> {
  await startWorkflow(deps, {
    workflow: 'stopProjectEnvironments',
    workflowId: workflowIds.projectStop(project.id),
    whenOpen: 'use_existing',
    args: [{ projectId: project.id, environmentIds }],
    summary: `Stop the environments of cancelled project ${project.name}`,
    searchAttributes: {
      TeamId: project.team_id,
      ProjectId: project.id,
      TaskKind: 'configuration',
      TaskType: 'project_stop',
    },
  });
}

/** The background re-check of a pending domain (CONTRACT "Domains"). */
export async function startDomainRecheck(
  deps: TemporalDeps,
  input: { domainId: string; firstWaitSeconds: number; giveUpAt: string },
): Promise<void> {
  await startWorkflow(deps, {
    workflow: 'recheckDomain',
    workflowId: workflowIds.domainRecheck(input.domainId),
    args: [input],
  });
}

/** Stops a domain's re-check (it would find the domain gone by itself); a re-check already over is fine. */
export async function stopDomainRecheck(deps: TemporalDeps, domainId: string): Promise<void> {
  await deps.temporal.workflow
    .getHandle(workflowIds.domainRecheck(domainId))
    .terminate('domain deleted')
    .catch(() => undefined);
}

/** The timer that ends a cancelled subscription at its period end. */
export async function startSubscriptionEnd(
  deps: TemporalDeps,
  s: { order: string; item: string; endsAt: string },
): Promise<void> {
  await startWorkflow(deps, {
    workflow: 'endSubscription',
    workflowId: workflowIds.subscriptionEnd(s.order),
    args: [{ order: s.order, endsAt: s.endsAt }],
    summary: `End subscription ${s.order} (${s.item}) at ${s.endsAt}`,
  });
}

/** Takes a deleted environment's processes, network and files off the host. */
export async function startEnvironmentRetire(
  deps: TemporalDeps,
  environmentId: string,
  port: number,
  host: string | null,
): Promise<void> {
  await startWorkflow(deps, {
    workflow: 'retireEnvironment',
    workflowId: workflowIds.environmentRetire(environmentId),
    args: [{ environmentId, port, ...(host ? { host } : {}) }],
  });
}

/** Delivers one event to one integration; a delivery whose workflow runs already is not started again. */
export async function startIntegrationDelivery(deps: TemporalDeps, deliveryId: string, summary: string): Promise<void> {
  try {
    await startWorkflow(deps, {
      workflow: 'deliverIntegrationEvent',
      workflowId: workflowIds.integrationDelivery(deliveryId),
      args: [{ deliveryId }],
      summary,
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

/** Starts the auto-deploy poller of this worker's task queue unless it runs already (AUTO_DEPLOY_POLL_SECONDS=0: none). */
export async function ensureAutoDeployPoller(
  deps: TemporalDeps & { config: { autoDeployPollSeconds: number } },
): Promise<void> {
  if (deps.config.autoDeployPollSeconds <= 0) return;
  await startWorkflow(deps, {
    workflow: 'pollAutoDeploys',
    workflowId: workflowIds.autoDeployPoller(deps.config.taskQueue),
    whenOpen: 'use_existing',
    args: [],
    summary: 'Auto-deploy: starts a deploy when the git ref of an environment with auto_deploy moves',
    searchAttributes: { TaskKind: 'deployments', TaskType: 'auto_deploy_poller' },
  });
}

// ---- Schedules ---------------------------------------------------------------------------------------------

/** The system's schedules: a run still going makes the next one skip; a missed run is taken within a day. */
const SYSTEM_POLICIES = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 day', pauseOnFailure: false } as const;

export interface EnsuredSchedule {
  scheduleId: string;
  created: boolean;
}

export function dailySpec(hourUtc: number, minute = 0): ScheduleSpec {
  const at = `${String(hourUtc).padStart(2, '0')}:${String(minute).padStart(2, '0')}`;
  return { calendars: [{ hour: hourUtc, minute, second: 0, comment: `every day at ${at} UTC` }], timezone: 'UTC' };
}

/** A system schedule's action: runs named `<scheduleId>-<time>`, with TaskKind maintenance and TaskType = scheduleId. */
export function systemAction(s: {
  scheduleId: string;
  workflowType: WorkflowName;
  taskQueue: string;
  args?: unknown[];
}): ScheduleOptionsStartWorkflowAction<Workflow> {
  return {
    type: 'startWorkflow',
    workflowType: s.workflowType,
    workflowId: s.scheduleId, // the schedule appends each run's time
    taskQueue: s.taskQueue,
    args: s.args ?? [{}],
    typedSearchAttributes: typedSearchAttributes({ TaskKind: 'maintenance', TaskType: s.scheduleId }),
  };
}

/**
 * Creates a schedule, or, when it exists, brings its spec, action and policies up to date keeping an
 * operator's pause and note.
 */
export async function ensureSchedule(
  client: Client,
  s: {
    scheduleId: string;
    spec: ScheduleSpec;
    action: ScheduleOptionsStartWorkflowAction<Workflow>;
    note: string;
    policies?: ScheduleOptions['policies'];
  },
): Promise<EnsuredSchedule> {
  const { scheduleId, spec, action } = s;
  const policies = s.policies ?? SYSTEM_POLICIES;
  try {
    await client.schedule.create({ scheduleId, spec, action, policies, state: { note: s.note } });
    return { scheduleId, created: true };
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  await client.schedule.getHandle(scheduleId).update((previous) => ({
    spec,
    action,
    policies,
    state: {
      paused: previous.state.paused,
      note: previous.state.note,
      remainingActions: previous.state.remainingActions,
    },
    typedSearchAttributes: previous.typedSearchAttributes,
  }));
  return { scheduleId, created: false };
}

/** A whole hour of the day, else an error naming the setting. */
function checkHour(name: string, hourUtc: number): void {
  if (!Number.isInteger(hourUtc) || hourUtc < 0 || hourUtc > 23)
    throw new Error(`${name} must be a whole hour from 0 to 23, got ${hourUtc}`);
}

interface DailySettings {
  /** The worker's task queue: the schedule's runs start there. */
  taskQueue: string;
  /** Hour of the day (UTC, 0-23). */
  hourUtc: number;
  /** Namespace of the schedule; the client's own when omitted. */
  namespace?: string;
}

function inNamespace(client: Client, namespace: string | undefined): Client {
  return namespace && namespace !== client.options.namespace
    ? new Client({ connection: client.connection, namespace })
    : client;
}

/** `token-expiry-reminders` (CONTRACT: at least daily), at REMINDER_HOUR_UTC. */
export async function ensureReminderSchedule(client: Client, settings: DailySettings): Promise<EnsuredSchedule> {
  checkHour('REMINDER_HOUR_UTC', settings.hourUtc);
  const scheduleId = SCHEDULE_TOKEN_EXPIRY_REMINDERS;
  return ensureSchedule(inNamespace(client, settings.namespace), {
    scheduleId,
    spec: dailySpec(settings.hourUtc),
    action: systemAction({ scheduleId, workflowType: 'sendTokenExpiryReminders', taskQueue: settings.taskQueue }),
    note: 'Token-expiry reminders: sends what is due, once each.',
  });
}

/** `prune-expired`, at PRUNE_HOUR_UTC:30. */
export async function ensurePruneSchedule(client: Client, settings: DailySettings): Promise<EnsuredSchedule> {
  checkHour('PRUNE_HOUR_UTC', settings.hourUtc);
  const scheduleId = SCHEDULE_PRUNE_EXPIRED;
  return ensureSchedule(inNamespace(client, settings.namespace), {
    scheduleId,
    spec: dailySpec(settings.hourUtc, 30),
    action: systemAction({ scheduleId, workflowType: 'pruneExpiredRecords', taskQueue: settings.taskQueue }),
    note: 'Deletes expired sessions, device codes, e-mail confirmations, stale sign-ups and old reminder rows.',
  });
}

/** `resource-samples-prune` (CONTRACT "Resources"), daily at 04:00 UTC. */
export async function ensureResourcePruneSchedule(client: Client, taskQueue: string): Promise<EnsuredSchedule> {
  const scheduleId = SCHEDULE_RESOURCE_SAMPLES_PRUNE;
  return ensureSchedule(client, {
    scheduleId,
    spec: dailySpec(4),
    action: systemAction({ scheduleId, workflowType: 'pruneResourceSamples', taskQueue, args: [] }),
    note: 'Deletes resource samples older than 90 days.',
  });
}

/** One renewal schedule per task queue (the default queue's is plainly `certificate-renewals`). */
export const certificateRenewalScheduleId = (taskQueue: string) =>
  taskQueue === DEFAULT_TASK_QUEUE ? 'certificate-renewals' : `certificate-renewals-${taskQueue}`;

/** The hourly certificate renewals (CONTRACT "Certificates"). */
export async function ensureCertificateRenewalSchedule(
  client: Client,
  taskQueue: string,
  every = '1h',
): Promise<EnsuredSchedule> {
  const scheduleId = certificateRenewalScheduleId(taskQueue);
  return ensureSchedule(client, {
    scheduleId,
    spec: { intervals: [{ every }] },
    action: systemAction({ scheduleId, workflowType: 'renewCertificates', taskQueue, args: [] }),
    note: 'Renews certificates near their end and retries failed ones once a day.',
  });
}

/** One host watch per task queue (the default queue's is plainly `host-watch`). */
export const hostWatchScheduleId = (taskQueue: string) =>
  taskQueue === DEFAULT_TASK_QUEUE ? 'host-watch' : `host-watch-${taskQueue}`;

/**
 * The host watch (CONTRACT "Hosts"): every few seconds, lost hosts' environments move or are marked `host_lost`,
 * drains with nothing left end `drained`, rejoined hosts stop their stale instances (workflows/moves.ts). Often
 * enough that a stateless environment answers again within 60 s of its host's loss (HOST_LOST_SECONDS 30).
 */
export async function ensureHostWatchSchedule(
  client: Client,
  taskQueue: string,
  every = '5s',
): Promise<EnsuredSchedule> {
  const scheduleId = hostWatchScheduleId(taskQueue);
  return ensureSchedule(client, {
    scheduleId,
    spec: { intervals: [{ every }] },
    action: systemAction({ scheduleId, workflowType: 'watchHosts', taskQueue, args: [] }),
    // a missed round is not made up: the next one sees everything as it is then
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '10s', pauseOnFailure: false },
    note: 'Moves the environments of lost hosts, finishes drains, stops the stale instances of rejoined hosts.',
  });
}

/** The archive's schedules of one task queue (the default queue's are plainly `pitr-full` and `pitr-diff`). */
const pitrScheduleId = (type: 'full' | 'diff', taskQueue: string) =>
  taskQueue === DEFAULT_TASK_QUEUE ? `pitr-${type}` : `pitr-${type}-${taskQueue}`;

/**
 * The WAL archive's backups (CONTRACT "Point-in-time recovery"): a full one weekly (Sunday 01:00 UTC) and a
 * differential one on the other days at 01:00 UTC, on the queue of the worker beside the services server.
 */
async function ensurePitrSchedules(client: Client, taskQueue: string): Promise<EnsuredSchedule[]> {
  const at = { hour: 1, minute: 0, second: 0 };
  const days = {
    full: [{ ...at, dayOfWeek: 'SUNDAY' as const, comment: 'every Sunday at 01:00 UTC' }],
    diff: [
      {
        ...at,
        dayOfWeek: { start: 'MONDAY' as const, end: 'SATURDAY' as const },
        comment: 'Monday to Saturday at 01:00 UTC',
      },
    ],
  };
  const out: EnsuredSchedule[] = [];
  for (const type of ['full', 'diff'] as const) {
    const scheduleId = pitrScheduleId(type, taskQueue);
    out.push(
      await ensureSchedule(client, {
        scheduleId,
        spec: { calendars: days[type], timezone: 'UTC' },
        action: systemAction({ scheduleId, workflowType: 'archiveBackups', taskQueue, args: [{ type }] }),
        note: `A ${type === 'full' ? 'full' : 'differential'} backup of the services server's WAL archive (pgBackRest).`,
      }),
    );
  }
  return out;
}

/** One restore-drill schedule per task queue (the default queue's is plainly `restore-drills`). */
const restoreDrillScheduleId = (taskQueue: string) =>
  taskQueue === DEFAULT_TASK_QUEUE ? 'restore-drills' : `restore-drills-${taskQueue}`;

/** The daily restore drills (CONTRACT "Point-in-time recovery"), at 05:00 UTC: after the default backup window. */
export async function ensureRestoreDrillSchedule(client: Client, taskQueue: string): Promise<EnsuredSchedule> {
  const scheduleId = restoreDrillScheduleId(taskQueue);
  return ensureSchedule(client, {
    scheduleId,
    spec: dailySpec(5),
    action: systemAction({ scheduleId, workflowType: 'runRestoreDrills', taskQueue, args: [] }),
    note: "Restores every environment's newest snapshot into scratch and compares it with what its backup recorded.",
  });
}

/**
 * Every system schedule, ensured when the worker starts. A failure leaves the worker running and is logged
 * (the next start tries again).
 */
export async function ensureSystemSchedules(
  deps: Pick<Deps, 'temporal' | 'logger'> & {
    config: Pick<
      Deps['config'],
      'taskQueue' | 'temporalNamespace' | 'reminderHourUtc' | 'pruneHourUtc' | 'servicesPgdata'
    >;
  },
): Promise<void> {
  const { temporal, config, logger } = deps;
  const daily = (hourUtc: number) => ({ taskQueue: config.taskQueue, hourUtc, namespace: config.temporalNamespace });
  const schedules: Array<[string, () => Promise<EnsuredSchedule>, string]> = [
    [
      'token-expiry reminder',
      () => ensureReminderSchedule(temporal, daily(config.reminderHourUtc)),
      'reminders will not go out until the worker restarts',
    ],
    [
      'prune-expired',
      () => ensurePruneSchedule(temporal, daily(config.pruneHourUtc)),
      'expired records stay until the worker restarts',
    ],
    ['resource sample prune', () => ensureResourcePruneSchedule(temporal, config.taskQueue), 'old samples stay'],
    ['certificate renewal', () => ensureCertificateRenewalSchedule(temporal, config.taskQueue), 'no renewals run'],
    ['restore drill', () => ensureRestoreDrillSchedule(temporal, config.taskQueue), 'no restore drills run'],
    [
      'host watch',
      () => ensureHostWatchSchedule(temporal, config.taskQueue),
      "lost hosts' environments do not move and drains do not end",
    ],
  ];
  if (config.servicesPgdata)
    schedules.push([
      'WAL archive backup',
      () => ensurePitrSchedules(temporal, config.taskQueue).then((r) => r[0]),
      'the archive gets no full or differential backups',
    ]);
  await Promise.all(
    schedules.map(([name, ensure, consequence]) =>
      ensure().then(
        (r) => logger.info(r, `${name} schedule ensured`),
        (err) => logger.error({ err }, `${name} schedule could not be ensured; ${consequence}`),
      ),
    ),
  );
}

/** `backups-<project_id>`: every day at the window's hour (UTC), `scheduledBackups` for the project. */
export const backupScheduleId = (projectId: string) => `backups-${projectId}`;

/** Creates or updates a project's backup window schedule. */
export async function syncBackupSchedule(deps: TemporalDeps, projectId: string, hourUtc: number): Promise<void> {
  await ensureSchedule(deps.temporal, {
    scheduleId: backupScheduleId(projectId),
    spec: { calendars: [{ hour: hourUtc, minute: 0, second: 0 }], timezone: 'UTC' },
    action: {
      type: 'startWorkflow',
      workflowType: 'scheduledBackups',
      workflowId: `scheduled-backups-${projectId}`,
      taskQueue: deps.config.taskQueue,
      args: [{ projectId }],
    },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 hour' },
    note: `Daily backups of project ${projectId}`,
  });
}

/** Deletes a project's backup window schedule (none is fine). */
export async function deleteBackupSchedule(deps: TemporalDeps, projectId: string): Promise<void> {
  try {
    await deps.temporal.schedule.getHandle(backupScheduleId(projectId)).delete();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
}
