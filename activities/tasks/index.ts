import type { Deps } from '../../system/deps';
import type { TaskRecord } from '../../db/task-record';
import { appendLogChunk } from '../toolkit/task-log';
import { finishTask, insertTask, openTasksAfter } from '../../db/queries/tasks';
import { recordTaskPhases, type TaskPhase } from '../../db/queries/task-phases';
import { type GateBlocker, type GatedStart, startTaskGated } from '../../db/queries/task-gate';
import { replaceFromLostHost } from '../../core/placement';
import { loadPriceList } from '../../core/pricing';
import { servicesHost } from '../../db/queries/hosts';

/** The error of a task whose workflow ended without it (closeOrphanedTasks). */
const ORPHANED =
  'This task stopped: its workflow was ended from outside the console (terminated or timed out in Temporal) ' +
  'before it finished, so nothing more runs for it. Look at what it changed, then start it again if it is still needed.';

/** Open tasks the orphan check asks Temporal about per call (a round of the host watch, every 5 s). */
const ORPHAN_BATCH = 5;

/** Task activities: the workflow records every transition of its task through these (all idempotent). */
export function createTaskActivities(deps: Deps) {
  const { knex } = deps;
  /** Where this worker's orphan check goes on from (a task's seq); back to the start after the last open task. */
  let orphanCursor = 0;
  return {
    /** Inserts the task row unless the API already did (one INSERT ... ON CONFLICT (id) statement). */
    async recordTask(task: TaskRecord & { run_id?: string | null }): Promise<void> {
      await insertTask(knex, task);
    },
    /**
     * pending -> running; false when the task was cancelled before anything started it; `{waiting}` while a task
     * it may not run beside runs on its environment (db/queries/task-gate.ts): the workflow asks again later.
     */
    async startTask(taskId: string): Promise<GatedStart> {
      return gatedStart(deps, taskId);
    },
    async finishTask(input: {
      taskId: string;
      status: 'succeeded' | 'failed' | 'cancelled';
      result?: Record<string, unknown> | null;
      error?: string | null;
    }): Promise<string | undefined> {
      // (a release it began and did not finish fails with it: db/queries/tasks.ts)
      const status = await finishTask(knex, input.taskId, input);
      // It is not waiting for build capacity any more.
      await knex('build_queue').where({ task_id: input.taskId }).del();
      return status;
    },
    /** Phases the workflow itself reaches (a build's release_ready), at the moment of the call. */
    async recordPhases(input: { taskId: string; phases: TaskPhase[] }): Promise<void> {
      const at = new Date().toISOString();
      await recordTaskPhases(knex, input.taskId, Object.fromEntries(input.phases.map((p) => [p, at])));
    },
    /**
     * The host an environment's machine work runs on (CONTRACT "Hosts"): its `web` server's placement. A server
     * placed before placement existed (host null), or none, is this worker's own host (npm start's worker adopts
     * those at its start). With HOST_LOST_SECONDS: work waits that long plus HOST_GRACE_SECONDS (30) for the host to take it.
     */
    async environmentHost(input: {
      environmentId: string;
    }): Promise<{ host: string; lostSeconds: number; graceSeconds: number }> {
      const row = await knex('servers').where({ environment_id: input.environmentId, role: 'web' }).first('host');
      return {
        host: row?.host ?? deps.config.hostName,
        lostSeconds: deps.config.hostLostSeconds,
        graceSeconds: deps.config.hostGraceSeconds,
      };
    },
    /** The host whose machine runs the services server (null: none registered as such, any worker may). */
    async servicesHost(): Promise<{ host: string | null; lostSeconds: number; graceSeconds: number }> {
      return {
        host: await servicesHost(knex),
        lostSeconds: deps.config.hostLostSeconds,
        graceSeconds: deps.config.hostGraceSeconds,
      };
    },
    /** A deploy's environment on a lost host is placed again elsewhere (core/placement.ts). */
    async replaceLostHost(input: { environmentId: string }) {
      const settings = { hostLostSeconds: deps.config.hostLostSeconds, plans: loadPriceList(deps.config).plans };
      return replaceFromLostHost(knex, settings, input.environmentId);
    },
    /**
     * Ends the open tasks whose workflow ended without them: an operator terminated it in Temporal's Web UI, or it
     * timed out, so no activity of its own will ever record an outcome, and the row would say `running` for good
     * (holding, for a resize or scale, its room on the host). Each is `failed` with why and what to do; a task is
     * asked about once it is a minute old, a few per call, going on from where the last call of this worker stopped
     * (db/queries/tasks.ts openTasksAfter): each open task is asked about within ⌈open ÷ 5⌉ calls. A task whose
     * workflow Temporal cannot describe for another reason is left as it is.
     */
    async closeOrphanedTasks(): Promise<string[]> {
      const closed: string[] = [];
      const batch = await openTasksAfter(knex, 60, orphanCursor, ORPHAN_BATCH);
      orphanCursor = batch.length < ORPHAN_BATCH ? 0 : batch[batch.length - 1]!.seq;
      for (const task of batch) {
        if (await workflowRuns(deps, task)) continue;
        if ((await finishTask(knex, task.id, { status: 'failed', error: ORPHANED })) !== 'failed') continue;
        await appendLogChunk(knex, task.id, `==> ${ORPHANED}\n`, {
          always: true,
          limitBytes: deps.config.taskLogLimitBytes,
        });
        deps.logger.warn(
          { taskId: task.id, workflowId: task.workflow_id },
          'a task whose workflow had ended was failed',
        );
        closed.push(task.id);
      }
      return closed;
    },
    /** A few lines of the workflow's own (headings, the final outcome) appended to the task log, even beyond its cap. */
    async appendTaskLog(input: { taskId: string; lines: string[] }): Promise<void> {
      if (input.lines.length === 0) return;
      await appendLogChunk(knex, input.taskId, input.lines.join('\n') + '\n', {
        always: true,
        limitBytes: deps.config.taskLogLimitBytes,
      });
    },
  };
}

/** pending -> running through the environment's gate (db/queries/task-gate.ts), asking Temporal about blockers. */
export function gatedStart(deps: Deps, taskId: string): Promise<GatedStart> {
  return startTaskGated(deps.knex, taskId, (b) => workflowRuns(deps, b));
}

/** Whether the blocker's workflow run is open; when Temporal cannot say, it is taken as running (wait, ask again). */
async function workflowRuns(deps: Deps, b: Pick<GateBlocker, 'workflow_id' | 'run_id'>): Promise<boolean> {
  try {
    const desc = await deps.temporal.workflow.getHandle(b.workflow_id, b.run_id ?? undefined).describe();
    return desc.status.name === 'RUNNING';
  } catch (err) {
    return (err as Error).name !== 'WorkflowNotFoundError';
  }
}

export type TaskActivities = ReturnType<typeof createTaskActivities>;
