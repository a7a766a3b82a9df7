/**
 * Deploy activities on the local provider: resolve the commit, pick or create the release, build it (on
 * the builds task queue, at most config.buildConcurrency at once across the system: build-gate.ts), run
 * the deploy steps, go live. Faults of the user's making are thrown as user faults (activities/toolkit/failures.ts: not
 * retried, their message the task's error); faults of the host are thrown and retried. The release the deploy and
 * the build activities work on (its row, its commit, opened on this host) is releases.ts.
 */
import { randomUUID } from 'node:crypto';
import type { Deps } from '../../system/deps';
import type { Provider } from '../../host/provider';
import { withTaskLog } from '../toolkit/task-log';
import {
  failRelease,
  liveRelease,
  readyReleaseOf,
  releaseBuilt,
  rollbackTarget,
  taskRelease,
} from '../../db/queries/releases';
import { pruneReleaseArchives, storeRelease } from './release-archives';
import { recordTaskPhases } from '../../db/queries/task-phases';
import { recordVariablesLive, variablesLiveColumn } from '../../db/queries/variables';
import { stepEnv, tenantEnv } from '../toolkit/step-env';
import { withHeartbeat } from '../toolkit/heartbeat';
import { consoleEnv } from '../storage/volume-env';
import { acquireBuildSlot } from './build-gate';
import { gatedStart } from '../tasks';
import { shortSha } from '../../db/workflow-names';
import type { DeployType } from '../../db/vocabulary';
import { environmentUrl } from '../../system/config';
import { webServerInstances, webServerSize } from '../../db/queries/machines';
import { planLimits } from '../machines/limits';
import { hostFault, userFault } from '../toolkit/failures';
import { withPhases } from '../toolkit/phases';
import { commitMessageOf, loadRelease, logLines, openRelease, resolveSha } from './releases';

const HEALTH_TIMEOUT_MS = 60_000;

interface PrepareInput {
  taskId: string;
  teamId: string;
  projectId: string;
  environmentId: string;
  gitRef: string;
  sha: string;
  reuseReady: boolean;
}

export function createDeployActivities(deps: Deps, provider: Provider) {
  const { supervisor } = provider;
  const { knex } = deps;
  const activities = {
    /** The commit the environment's git ref names now. */
    async resolveCommit(input: { taskId: string; projectId: string; gitRef: string }): Promise<string> {
      return withTaskLog(deps, input.taskId, async (log) => (await resolveSha(deps, log, input)).sha);
    },

    /**
     * resolveCommit and prepareRelease in one activity (a deploy's first step): its first log line says
     * whether the deploy needs a build.
     */
    async resolveRelease(
      input: Omit<PrepareInput, 'sha'>,
    ): Promise<{ sha: string; releaseId: string | null; ready: boolean }> {
      return withTaskLog(deps, input.taskId, async (log) => {
        const { sha, resolving } = await resolveSha(deps, log, input, true);
        const prepared = await activities.prepareRelease({ ...input, sha });
        log.line(
          prepared.ready
            ? `${resolving}: ${shortSha(sha)}, release ${prepared.releaseId} is built already; no build needed`
            : prepared.releaseId
              ? `${resolving}: ${shortSha(sha)}, which needs a build`
              : `${resolving}: ${shortSha(sha)}; the task was cancelled, so nothing is built`,
        );
        return { sha, ...prepared };
      });
    },

    /**
     * The release to deploy for this commit: a ready one of the environment (no build then), else the one
     * this task already created (a retry), else a new `building` one; none (null) when the task has ended
     * meanwhile (cancelled while pending).
     */
    async prepareRelease(input: PrepareInput): Promise<{ releaseId: string | null; ready: boolean }> {
      if (input.reuseReady) {
        const ready = await readyReleaseOf(knex, input.environmentId, input.sha);
        if (ready) return { releaseId: ready, ready: true };
      }
      const mine = await taskRelease(knex, input);
      return mine ? { releaseId: mine.id, ready: mine.status === 'ready' } : { releaseId: null, ready: false };
    },

    /** The release a redeploy (the live one) or a rollback (the one before the last deployment) puts live. */
    async chooseRelease(input: {
      taskId: string;
      environmentId: string;
      type: Exclude<DeployType, 'deploy'>;
    }): Promise<{ releaseId: string; sha: string; gitRef: string }> {
      const release =
        input.type === 'redeploy'
          ? await liveRelease(knex, input.environmentId)
          : await rollbackTarget(knex, input.environmentId);
      if (!release) {
        throw userFault(
          'NoReleaseToDeploy',
          input.type === 'redeploy' ? 'nothing is live to redeploy' : 'no earlier release to roll back to',
        );
      }
      await withTaskLog(deps, input.taskId, async (log) => {
        log.line(
          input.type === 'redeploy'
            ? `==> Redeploying release ${release.id} (${release.git_ref}@${shortSha(release.commit_sha)})`
            : `==> Rolling back to release ${release.id} (${release.git_ref}@${shortSha(release.commit_sha)}); code only, no deploy steps`,
        );
      });
      return { releaseId: release.id, sha: release.commit_sha, gitRef: release.git_ref };
    },

    /** The manifest's deploy steps, run in the release directory before it goes live. */
    async runDeploySteps(input: { taskId: string; releaseId: string }): Promise<void> {
      const failed = (message: string) =>
        userFault('DeployStepsFailed', `deploy steps failed: ${message}; the previous release keeps serving`);
      return withTaskLog(deps, input.taskId, (log) =>
        withHeartbeat(async (signal) => {
          const release = await loadRelease(deps, input.releaseId);
          const tenant = await tenantEnv(deps, release.environment_id);
          const opened = await openRelease(deps, provider, release, log, tenant, signal);
          if (!opened.ok) throw failed(opened.message);
          if (opened.manifest.deploy.length === 0) {
            log.line('==> No deploy steps in service.yaml');
            return;
          }
          log.line('==> Running deploy steps');
          const env = await knex('environments').where({ id: release.environment_id }).first('port');
          if (!env) throw userFault('EnvironmentMissing', 'the environment no longer exists');
          const held = provider.heldSteps(
            release.environment_id,
            'deploy',
            planLimits(deps.config, await webServerSize(knex, release.environment_id)),
          );
          const r = await provider.runDeploySteps({
            jail: await provider.openJail(release.environment_id, env.port),
            releaseDir: opened.releaseDir,
            manifest: opened.manifest,
            onSpawn: held.onSpawn,
            env: stepEnv(tenant.vars, { ...held.env, ...(await consoleEnv(deps, provider, release.environment_id)) }),
            stepTimeoutMs: deps.config.stepTimeoutSeconds * 1000,
            signal,
            onLine: logLines(log, tenant.redact),
          });
          if (!r.ok) throw failed(r.message);
        }),
      );
    },

    /**
     * Puts the release live on the environment's port and records it: one deployments row per task
     * (deployments.task_id is unique) and environments.live_release_id. A retry after the switch finds the
     * release already live (or the row already written) and does not switch again.
     */
    async goLive(input: {
      taskId: string;
      releaseId: string;
      /** `move`: the live release started on the environment's new host (CONTRACT "Hosts"): no deployment. */
      type: DeployType | 'move';
      skipSteps: boolean;
    }): Promise<{ deploymentId: string | null; url: string }> {
      return withTaskLog(deps, input.taskId, (log) =>
        withPhases(deps, input.taskId, (phases) =>
          withHeartbeat(async (signal) => {
            const release = await loadRelease(deps, input.releaseId);
            const env = await knex('environments').where({ id: release.environment_id }).first('id', 'port');
            if (!env) throw userFault('EnvironmentMissing', 'the environment no longer exists');
            const url = environmentUrl(deps.config, env.port);
            const done = await knex('deployments').where({ task_id: input.taskId }).first('id');
            if (done) return { deploymentId: done.id, url };
            const type = input.type;

            // what the processes get, read at once (each a query)
            const [tenant, given, size, instances] = await Promise.all([
              tenantEnv(deps, release.environment_id),
              consoleEnv(deps, provider, env.id),
              webServerSize(knex, env.id),
              webServerInstances(knex, env.id),
            ]);
            const opened = await openRelease(deps, provider, release, log, tenant, signal);
            if (!opened.ok) throw userFault('GoLiveFailed', opened.message);
            phases.mark('release_ready');
            log.line(`==> Starting release ${release.id} (${release.git_ref}@${shortSha(release.commit_sha)})`);
            const live = await supervisor.goLive({
              envId: env.id,
              port: env.port,
              releaseId: release.id,
              releaseDir: opened.releaseDir,
              manifest: opened.manifest,
              env: stepEnv(tenant.vars, given),
              healthTimeoutMs: HEALTH_TIMEOUT_MS,
              onLine: logLines(log, tenant.redact),
              limits: planLimits(deps.config, size) ?? undefined,
              instances,
              // the guard of a retried go-live: this task's release already live switches nothing
              taskId: input.taskId,
              onPhase: (phase) => phases.mark(phase),
            });
            // a move's error says itself where the environment serves (workflows/moves.ts)
            if (!live.ok)
              throw userFault(
                'GoLiveFailed',
                type === 'move' ? live.message : `${live.message}; the previous release keeps serving`,
              );
            // what the processes got; a go-live an earlier attempt of this task made read them then: not known
            const started = live.alreadyLive ? null : tenant.vars;
            if (type === 'move') {
              await recordVariablesLive(knex, deps.secrets, env.id, started);
              return { deploymentId: null, url };
            }

            const deploymentId = await knex.transaction(async (trx) => {
              await trx.raw(
                `INSERT INTO deployments (id, environment_id, release_id, task_id, type, skip_steps)
               VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (task_id) DO NOTHING`,
                [randomUUID(), env.id, release.id, input.taskId, type, input.skipSteps],
              );
              await trx('environments')
                .where({ id: env.id })
                .update({
                  live_release_id: release.id,
                  variables_live: variablesLiveColumn(deps.secrets, started),
                  updated_at: trx.fn.now(),
                });
              return (await trx('deployments').where({ task_id: input.taskId }).first('id')).id as string;
            });
            log.line(`==> Live: release ${release.id} (${release.git_ref}@${shortSha(release.commit_sha)}) at ${url}`);
            await pruneReleaseArchives(deps, provider, env.id);
            return { deploymentId, url };
          }),
        ),
      );
    },
  };
  return activities;
}

/**
 * The build activity, served on the builds task queue. It first waits, `pending`, for one of the
 * BUILD_CONCURRENCY build slots of the whole system, in request order (build-gate.ts); taking the slot moves
 * the task to `running` (a task cancelled meanwhile is not built). The slot is given back when the build
 * ends, fails or is cancelled, and frees itself if this worker dies.
 */
export function createBuildActivities(deps: Deps, provider: Provider) {
  const { knex } = deps;
  // The build itself (checkout and up to 20 steps); the wait for a slot before it is not limited.
  const buildTimeoutMs = (deps.config.stepTimeoutSeconds * 20 + 600) * 1000;
  return {
    async buildTaskRelease(input: {
      taskId: string;
      releaseId: string;
    }): Promise<{ started: false } | { started: true; reused: boolean }> {
      const failed = (message: string) => userFault('BuildFailed', `build failed: ${message}`);
      const slot = await acquireBuildSlot({
        knex,
        databaseUrl: deps.config.databaseUrl!,
        capacity: deps.config.buildConcurrency,
        taskId: input.taskId,
        start: (id) => gatedStart(deps, id),
      });
      if (!slot) return { started: false };
      try {
        return await withTaskLog(deps, input.taskId, (log) =>
          withHeartbeat(async (cancelled) => {
            const tooLong = AbortSignal.timeout(buildTimeoutMs);
            const signal = AbortSignal.any([cancelled, slot.lost, tooLong]);
            const release = await loadRelease(deps, input.releaseId);
            if (release.status === 'failed') throw failed('the build of this release failed');
            log.line(`==> Building ${release.git_ref}@${shortSha(release.commit_sha)} (release ${release.id})`);
            const tenant = await tenantEnv(deps, release.environment_id);
            const r = await openRelease(deps, provider, release, log, tenant, signal);
            if (!r.ok) {
              if (r.reason === 'cancelled' && !cancelled.aborted) {
                // Lost its slot (the database connection dropped): build again with a slot of its own.
                if (!tooLong.aborted) throw hostFault('BuildSlotLost', 'the build lost its build slot');
                await failRelease(knex, release.id);
                throw failed(`the build did not finish within ${buildTimeoutMs / 1000} s`);
              }
              if (r.reason !== 'cancelled') await failRelease(knex, release.id);
              throw failed(r.reason === 'cancelled' ? 'cancelled' : r.message);
            }
            await releaseBuilt(knex, release.id, await commitMessageOf(deps, release), {
              web: r.manifest.web ?? null,
              health: r.manifest.health ?? null,
            });
            // built here earlier (a retry), or fetched: in the store once all the same
            await storeRelease(deps, provider, release, log);
            await recordTaskPhases(knex, input.taskId, { build_done: new Date().toISOString() });
            return { started: true, reused: r.reused };
          }),
        );
      } finally {
        await slot.release();
      }
    },
  };
}

export type DeployActivities = ReturnType<typeof createDeployActivities>;
export type BuildActivities = ReturnType<typeof createBuildActivities>;
/** The activities the builds worker serves. */
export const BUILD_ACTIVITY_NAMES = ['buildTaskRelease'] as const;
