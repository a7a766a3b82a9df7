/**
 * Every workflow the system starts, in one place (tasks start through core/tasks.ts, which uses `startWorkflow`
 * here; the schedules are in core/schedules.ts). The search-attribute keys are defined here, from
 * db/vocabulary.ts's names.
 *
 * Workflows that are not tasks: stopping a cancelled project, a domain's background re-check, the end of a
 * cancelled subscription, retiring a deleted environment, an integration delivery, an event's e-mail sent again,
 * the auto-deploy poller.
 */
import {
  type Client,
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdConflictPolicy,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { createHash } from 'node:crypto';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { SEARCH_ATTRIBUTES } from '../db/vocabulary';
// Types only: the starts are typed by the workflow functions, and no workflow code is loaded here.
import type * as workflows from '../workflows';
import { workflowIds, HEARTBEAT_TIMEOUT_MEMO } from '../db/workflow-names';

export type TemporalDeps = {
  temporal: Client;
  config: { taskQueue: string; activityHeartbeatTimeoutSeconds?: number };
};

// ---- Search attributes -------------------------------------------------------------------------------------

type SearchAttributeName = (typeof SEARCH_ATTRIBUTES)[number];

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

interface WorkflowStart<N extends WorkflowName> {
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

/**
 * An event's e-mail that the mail server did not take, handed to Temporal to send again (workflows/emails.ts). One
 * run per mail and address: the same mail handed over twice while its first run retries is sent once.
 */
export async function startEventEmailRetry(
  deps: TemporalDeps,
  input: WorkflowArgs<'deliverEventEmail'>[0],
): Promise<void> {
  const key = createHash('sha256')
    .update(JSON.stringify([input.event, input.teamId, input.to, input.mail.subject, input.mail.text]))
    .digest('hex')
    .slice(0, 32);
  try {
    await startWorkflow(deps, {
      workflow: 'deliverEventEmail',
      workflowId: workflowIds.eventEmail(key),
      args: [input],
      summary: `The ${input.event} e-mail, sent again until the mail server takes it`,
      searchAttributes: { TeamId: input.teamId },
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
