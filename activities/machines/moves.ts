/**
 * A move's activities (workflows/moves.ts, CONTRACT "Hosts"): the new placement (shared queue, the database
 * only), the old host's stop (on the old host's queue: its supervisor stops the instances, the edge already
 * serves the new host's), and the host watch's sweep and a rejoining host's clean-up. The new host's start is the
 * go-live that deploys use (activities/deploys), sent to the new host's queue.
 */
import { existsSync } from 'node:fs';
import { Context } from '@temporalio/activity';
import { evacuationEmail } from '../../system/mail';
import type { Deps } from '../../system/deps';
import type { Provider } from '../../host/provider';
import { loadPriceList } from '../../core/pricing';
import { placeMove } from '../../core/placement';
import { markHostLost, sweepHosts } from '../../core/host-moves';
import {
  clearHostLoss,
  environmentsOnHost,
  environmentsPlacedElsewhere,
  evacuationFacts,
  setWebPlacement,
  setWebStatus,
  teamAdminEmails,
  volumeHeldAtLastSample,
} from '../../db/queries/host-moves';
import { liveRelease } from '../../db/queries/releases';
import { recordTaskPhases } from '../../db/queries/task-phases';
import { withTaskLog } from '../toolkit/task-log';

export function createMoveActivities(deps: Deps, provider: Provider) {
  const { knex } = deps;
  const { supervisor } = provider;
  return {
    /**
     * What the move starts from: the live release (none: nothing to start) and the last sample's volume (what moves
     * started before the old host was always asked go by).
     */
    async moveFacts(input: { environmentId: string }) {
      const release = await liveRelease(knex, input.environmentId);
      return {
        liveReleaseId: release?.id ?? null,
        volumeHeld: await volumeHeldAtLastSample(knex, input.environmentId),
      };
    },

    /** The environment's new host (core/placement.ts placeMove), recorded; `refused` when none has room. */
    async placeMove(input: { environmentId: string }) {
      const settings = {
        hostLostSeconds: deps.config.hostLostSeconds,
        plans: loadPriceList(deps.config).plans,
        ownHost: deps.config.hostName,
      };
      return {
        ...(await placeMove(knex, settings, input.environmentId)),
        lostSeconds: deps.config.hostLostSeconds,
        graceSeconds: deps.config.hostGraceSeconds,
      };
    },

    /** A move that did not start on its new host: the environment is placed back where it still runs. */
    async revertMove(input: { environmentId: string; host: string }): Promise<void> {
      await setWebPlacement(knex, input.environmentId, input.host);
    },

    /** Moved: the `web` server runs (no longer `host_lost`). */
    async markMoved(input: { environmentId: string }): Promise<void> {
      await setWebStatus(knex, input.environmentId, 'running');
    },

    /** Its host is lost and it could not move: `host_lost`, and the edge answers 503. */
    async markHostLost(input: { environmentId: string }): Promise<void> {
      await markHostLost(deps, input.environmentId);
    },

    /** On the old host's queue: its instances stop (the edge serves the new host's already); `old_stopped`. */
    async leaveHost(input: { taskId: string; environmentId: string }): Promise<void> {
      await withTaskLog(deps, input.taskId, async (log) => {
        const stopped = await supervisor.leave(input.environmentId);
        log.line(stopped ? '==> The previous instances stopped' : '==> No previous instance was running');
        await recordTaskPhases(knex, input.taskId, { old_stopped: new Date().toISOString() });
      });
    },

    /**
     * On the old host's queue, after a move that did not finish: the edge serves this host's instances again (a
     * new host that published its own before failing, or died after, no longer has the route).
     */
    async serveHereAgain(input: { environmentId: string }): Promise<void> {
      await supervisor.republish(input.environmentId);
    },

    /**
     * On the new host's queue, after a move that did not finish there: what it started of the environment stops,
     * and its sandbox's network goes; the edge is left alone (it serves the old host). Its files stay, as on a
     * host a move left.
     */
    async leaveAfterFailedMove(input: { taskId: string; environmentId: string }): Promise<void> {
      const env = await knex('environments').where({ id: input.environmentId }).first('port');
      const stopped = await supervisor.leave(input.environmentId, env?.port);
      if (stopped)
        await withTaskLog(deps, input.taskId, async (log) =>
          log.line('==> What had started on the other machine stopped'),
        );
    },

    /**
     * One round of the host watch (core/host-moves.ts sweepHosts). Scheduled with a heartbeat timeout, it heartbeats
     * (activities/toolkit/keep-alive.ts): a round taken by a host that dies meanwhile runs again elsewhere.
     */
    async sweepHosts() {
      return { ...(await sweepHosts(deps)), graceSeconds: deps.config.hostGraceSeconds };
    },

    /**
     * On a rejoining host's queue: stops its instances of every environment placed elsewhere meanwhile (what ran
     * here: its directory is on this host), and serves again the ones still placed here that were `host_lost`.
     */
    async stopStaleInstances(): Promise<{ stopped: number; back: number }> {
      let stopped = 0;
      for (const envId of await environmentsPlacedElsewhere(knex, deps.config.hostName)) {
        if (!existsSync(provider.environmentDir(envId)) && !supervisor.status(envId)) continue;
        if (await supervisor.leave(envId)) stopped++;
      }
      let back = 0;
      for (const env of await environmentsOnHost(knex, deps.config.hostName)) {
        if (env.server_status !== 'host_lost' || !supervisor.status(env.environment_id)) continue;
        await supervisor.republish(env.environment_id);
        await setWebStatus(knex, env.environment_id, 'running');
        back++;
      }
      if (stopped + back > 0) deps.logger.info({ stopped, back }, 'rejoined: stale instances stopped');
      return { stopped, back };
    },

    /** An evacuated environment's team owners and admins hear what was lost: the writes since its snapshot. */
    async mailEvacuation(input: { taskId: string; environmentId: string; backupId: string }): Promise<number> {
      const facts = await evacuationFacts(knex, input.environmentId, input.backupId);
      if (!facts) return 0;
      const mail = evacuationEmail({
        project: facts.project,
        environment: facts.environment,
        snapshotAt: new Date(facts.snapshot_at).toISOString().replace('.000Z', 'Z'),
        taskUrl: `${deps.config.baseUrl}/api/vc/v1/tasks/${input.taskId}`,
      });
      const people = await teamAdminEmails(knex, facts.team_id);
      // an attempt after a partial send would send twice: only the first attempt sends
      if (Context.current().info.attempt > 1) return 0;
      for (const to of people)
        await deps.mailer
          .send({ to, ...mail })
          .catch((err) => deps.logger.warn({ err: String(err), taskId: input.taskId }, 'evacuation e-mail not sent'));
      return people.length;
    },

    /** The rejoined host's loss is over (it stays `drained` until the operator undrains it). */
    async rejoinDone(input: { host: string }): Promise<void> {
      await clearHostLoss(knex, input.host);
    },
  };
}

export type MoveActivities = ReturnType<typeof createMoveActivities>;
