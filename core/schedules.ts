/**
 * The schedules the system keeps: the system's (token-expiry reminders, prune-expired, resource-sample prune,
 * certificate renewals, the host watch, the archive's backups, restore drills), created when the worker starts
 * and brought up to the current settings on every start with an operator's pause and note kept; and each
 * project's backup window (`backups-<project_id>`). Their runs are started like every workflow
 * (core/temporal-starts.ts).
 */
import {
  Client,
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type ScheduleOptions,
  type ScheduleOptionsStartWorkflowAction,
  type ScheduleSpec,
  type Workflow,
} from '@temporalio/client';
import type { Deps } from '../system/deps';
import { DEFAULT_TASK_QUEUE } from '../system/config';
import {
  SCHEDULE_PRUNE_EXPIRED,
  SCHEDULE_RESOURCE_SAMPLES_PRUNE,
  SCHEDULE_TOKEN_EXPIRY_REMINDERS,
} from '../db/workflow-names';
import { type TemporalDeps, typedSearchAttributes, type WorkflowName } from './temporal-starts';

/** The system's schedules: a run still going makes the next one skip; a missed run is taken within a day. */
const SYSTEM_POLICIES = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 day', pauseOnFailure: false } as const;

interface EnsuredSchedule {
  scheduleId: string;
  created: boolean;
}

function dailySpec(hourUtc: number, minute = 0): ScheduleSpec {
  const at = `${String(hourUtc).padStart(2, '0')}:${String(minute).padStart(2, '0')}`;
  return { calendars: [{ hour: hourUtc, minute, second: 0, comment: `every day at ${at} UTC` }], timezone: 'UTC' };
}

/** A system schedule's action: runs named `<scheduleId>-<time>`, with TaskKind maintenance and TaskType = scheduleId. */
function systemAction(s: {
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
async function ensureSchedule(
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

/** A system schedule's id on `taskQueue`: the default queue's is plainly `name`, another queue's `<name>-<queue>`. */
const queueScheduleId = (name: string, taskQueue: string) =>
  taskQueue === DEFAULT_TASK_QUEUE ? name : `${name}-${taskQueue}`;

/**
 * A system schedule whose runs start `workflowType` on `taskQueue` with no arguments; the system's policies unless
 * `policies` are given.
 */
function ensureQueueSchedule(
  client: Client,
  taskQueue: string,
  s: {
    scheduleId: string;
    spec: ScheduleSpec;
    workflowType: WorkflowName;
    note: string;
    policies?: ScheduleOptions['policies'];
    /** The workflow's arguments (none by default). */
    args?: unknown[];
  },
): Promise<EnsuredSchedule> {
  const { scheduleId, workflowType } = s;
  return ensureSchedule(client, {
    scheduleId,
    spec: s.spec,
    action: systemAction({ scheduleId, workflowType, taskQueue, args: s.args ?? [] }),
    policies: s.policies,
    note: s.note,
  });
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
  return ensureQueueSchedule(client, taskQueue, {
    scheduleId: SCHEDULE_RESOURCE_SAMPLES_PRUNE,
    spec: dailySpec(4),
    workflowType: 'pruneResourceSamples',
    note: 'Deletes resource samples older than 90 days.',
  });
}

/** One renewal schedule per task queue (the default queue's is plainly `certificate-renewals`). */
const certificateRenewalScheduleId = (taskQueue: string) => queueScheduleId('certificate-renewals', taskQueue);

/** The hourly certificate renewals (CONTRACT "Certificates"). */
export async function ensureCertificateRenewalSchedule(
  client: Client,
  taskQueue: string,
  every = '1h',
): Promise<EnsuredSchedule> {
  return ensureQueueSchedule(client, taskQueue, {
    scheduleId: certificateRenewalScheduleId(taskQueue),
    spec: { intervals: [{ every }] },
    workflowType: 'renewCertificates',
    note: 'Renews certificates near their end and retries failed ones once a day.',
  });
}

/** One host watch per task queue (the default queue's is plainly `host-watch`). */
export const hostWatchScheduleId = (taskQueue: string) => queueScheduleId('host-watch', taskQueue);

/**
 * The host watch (CONTRACT "Hosts"): every few seconds, lost hosts' environments move or are marked `host_lost`,
 * drains with nothing left end `drained`, rejoined hosts stop their stale instances (workflows/moves.ts). Often
 * enough that a stateless environment answers again within 60 s of its host's loss (HOST_LOST_SECONDS 30). The
 * schedule fires every `everySeconds`; a run does its rounds for `forSeconds` (5 minutes), and the fires meanwhile
 * are skipped: Temporal's list holds a run every few minutes instead of one per round (17,280 a day at 5 s).
 */
export async function ensureHostWatchSchedule(
  client: Client,
  taskQueue: string,
  o: { everySeconds?: number; forSeconds?: number } = {},
): Promise<EnsuredSchedule> {
  const everySeconds = o.everySeconds ?? 5;
  return ensureQueueSchedule(client, taskQueue, {
    scheduleId: hostWatchScheduleId(taskQueue),
    spec: { intervals: [{ every: `${everySeconds}s` }] },
    workflowType: 'watchHosts',
    args: [{ everySeconds, forSeconds: o.forSeconds ?? 300 }],
    // a missed round is not made up: the next one sees everything as it is then
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '10s', pauseOnFailure: false },
    note: 'Moves the environments of lost hosts, finishes drains, stops the stale instances of rejoined hosts. A run does its rounds for a few minutes; Pause stops the next run, Terminate the one under way.',
  });
}

/** The archive's schedules of one task queue (the default queue's are plainly `pitr-full` and `pitr-diff`). */
const pitrScheduleId = (type: 'full' | 'diff', taskQueue: string) => queueScheduleId(`pitr-${type}`, taskQueue);

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
const restoreDrillScheduleId = (taskQueue: string) => queueScheduleId('restore-drills', taskQueue);

/** The daily restore drills (CONTRACT "Point-in-time recovery"), at 05:00 UTC: after the default backup window. */
export async function ensureRestoreDrillSchedule(client: Client, taskQueue: string): Promise<EnsuredSchedule> {
  return ensureQueueSchedule(client, taskQueue, {
    scheduleId: restoreDrillScheduleId(taskQueue),
    spec: dailySpec(5),
    workflowType: 'runRestoreDrills',
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
const backupScheduleId = (projectId: string) => `backups-${projectId}`;

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
